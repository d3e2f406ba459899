"""What ``pip install kafka-s3`` accepts: the runtime dependencies are ranges, and the lowest pyspark they allow is
the one CI proves."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: released by date, newer is always right: a lower bound alone
DATED = {"certifi", "tzdata"}


def _requirements() -> list[Requirement]:
    return [Requirement(line) for line in PROJECT["dependencies"]]


@pytest.mark.issue(28, item=2)
@pytest.mark.parametrize("requirement", _requirements(), ids=lambda r: r.name)
def test_a_runtime_dependency_is_a_range_not_a_pin(requirement: Requirement) -> None:
    operators = {spec.operator for spec in requirement.specifier}
    assert "==" not in operators and "===" not in operators, f"{requirement} pins one release"
    assert operators & {">=", ">", "~="}, f"{requirement} has no lower bound"
    if requirement.name not in DATED:
        assert operators & {"<", "<=", "~="}, f"{requirement} has no upper bound"


@pytest.mark.issue(28, item=2)
def test_ci_proves_the_lowest_pyspark_the_range_allows() -> None:
    (pyspark,) = [r for r in _requirements() if r.name == "pyspark"]
    (lowest,) = [spec.version for spec in pyspark.specifier if spec.operator == ">="]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r'"pyspark\[connect\]==\$lowest"', ci), ".ci/run does not install the lower bound"
    assert "tests/integration/spark/test_dataframe_reader.py" in ci, ".ci/run does not run the reader on it"
    # 4.0's Python data sources have no filter pushdown (pyspark.sql.datasource.Filter, pushFilters): spark/pushdown.py
    assert Version(lowest) >= Version("4.1"), f"pyspark >= {lowest} allows a release without the API the reader needs"
