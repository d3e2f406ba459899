"""Each gate of ``make lint`` fails on a violation planted in a copy of the tree (run by ``make lint-selftest``).

The clean copy passes first, so a failure below is the planted violation's doing and not the tree's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)  # the virtualenv running the tests (its ruff, mypy and lint-imports)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    for part in ("src", "tools"):  # what mypy checks (tools/: the dev tooling, outside the wheel)
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "Makefile"):
        shutil.copy2(ROOT / name, copy / name)
    for empty in ("tests", "bench"):
        (copy / empty).mkdir()
        (copy / empty / "placeholder.py").write_text('"""Nothing to lint."""\n')
    (copy / "tests" / "test_placeholder.py").write_text(
        '"""A suite to collect."""\n\n\ndef test_nothing() -> None:\n    pass\n'
    )
    return copy


@pytest.fixture
def tree(pristine, tmp_path) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(pristine, copy)
    return copy


def make_lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "MYPY_CACHE_DIR": str(tree / ".mypy_cache")}
    return subprocess.run(
        # -o venv: use the virtualenv as it is; installing from the copy would point its editable install at the copy
        ["make", "--no-print-directory", "-o", "venv", "lint", f"VENV={VENV}"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )


def plant(tree: Path, module: str, text: str, formatted: bool = True) -> None:
    """Append ``text`` to a module; ``formatted``: then format it, so that only the gate under test can fail."""
    path = tree / "src" / "kafka_s3" / module
    path.write_text(path.read_text() + text)
    if formatted:
        subprocess.run([str(VENV / "bin" / "ruff"), "format", "--quiet", str(path)], check=True)


def test_the_clean_tree_passes(tree):
    result = make_lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_import_cycle_fails(tree):
    plant(tree, "core/layout.py", "\nfrom kafka_s3.core import rotation as _cycle  # noqa: E402, F401\n")
    plant(tree, "core/rotation.py", "\nfrom kafka_s3.core import layout as _cycle  # noqa: E402, F401\n")
    result = make_lint(tree)
    assert result.returncode != 0
    assert "No import cycles" in result.stdout and "BROKEN" in result.stdout


def test_core_importing_pyspark_fails(tree):
    plant(tree, "core/layout.py", "\n\ndef _session() -> None:\n    import pyspark  # noqa: F401\n")
    result = make_lint(tree)
    assert result.returncode != 0
    assert "The core is pure" in result.stdout and "BROKEN" in result.stdout


def test_a_lower_layer_importing_a_higher_one_fails(tree):
    plant(
        tree,
        "io/kafka/admin.py",
        "\n\ndef _driver() -> None:\n    import kafka_s3.pipelines.backup.driver  # noqa: F401\n",
    )
    result = make_lint(tree)
    assert result.returncode != 0
    assert "Layers" in result.stdout and "BROKEN" in result.stdout


def test_an_unformatted_file_fails(tree):
    plant(tree, "core/layout.py", "\nUNFORMATTED = {'a':1,\n        'b' :2}\n", formatted=False)
    result = make_lint(tree)
    assert result.returncode != 0
    assert "src/kafka_s3/core/layout.py" in result.stdout and "1 file would be reformatted" in result.stdout


def test_a_lint_error_fails(tree):
    plant(tree, "core/layout.py", "\n\ndef _unused() -> None:\n    import os\n")
    result = make_lint(tree)
    assert result.returncode != 0
    assert "F401" in result.stdout


def test_a_type_error_fails(tree):
    plant(tree, "core/layout.py", '\n\ndef _typed() -> int:\n    return "not an int"\n')
    result = make_lint(tree)
    assert result.returncode != 0
    assert 'Incompatible return value type (got "str", expected "int")' in result.stdout


def test_a_test_importing_a_module_that_is_gone_fails(tree):
    # integration tests import the package too, and `make test-unit` never imports them
    (tree / "tests" / "test_moved.py").write_text(
        '"""Imports a module that moved."""\n\nimport kafka_s3.core.no_such_module  # noqa: F401\n\n\n'
        "def test_it() -> None:\n    pass\n"
    )
    result = make_lint(tree)
    assert result.returncode != 0
    assert "No module named 'kafka_s3.core.no_such_module'" in result.stdout


def test_two_test_modules_of_one_basename_fail(tree):
    # a test directory without an __init__.py (the repository's have one) has pytest import its modules by basename,
    # and a second one of the same name breaks the collection of the whole suite, while each directory alone passes
    for where in ("unit", "integration"):
        (tree / "tests" / where).mkdir()
        (tree / "tests" / where / "test_same_name.py").write_text(
            '"""One of two."""\n\n\ndef test_it() -> None:\n    pass\n'
        )
    result = make_lint(tree)
    assert result.returncode != 0
    assert "import file mismatch" in result.stdout
