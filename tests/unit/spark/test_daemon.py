"""Issue 30 target 3: Spark's daemon runs the installed pyspark when it is the same as Spark's pyspark.zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kafka_s3.spark.daemon import directory_version, installed_first, zip_version

pytestmark = pytest.mark.issue(30)

ZIP = "/spark/python/lib/pyspark.zip"
PY4J = "/spark/python/lib/py4j-0.10.9.9-src.zip"
SITE = "/venv/lib/python3.11/site-packages"


def versions(**by_path: str):
    return lambda path: by_path.get(path)


def test_the_zip_moves_behind_the_installed_pyspark_of_the_same_version():
    path = ["", ZIP, PY4J, "/usr/lib/python311.zip", SITE]

    moved = installed_first(path, read_zip=versions(**{ZIP: "4.3.0"}), read_directory=versions(**{SITE: "4.3.0"}))

    assert moved == ["", PY4J, "/usr/lib/python311.zip", SITE, ZIP]


def test_the_zip_stays_first_when_the_installed_pyspark_is_another_version():
    path = [ZIP, PY4J, SITE]

    assert installed_first(path, versions(**{ZIP: "4.3.0"}), versions(**{SITE: "4.1.0"})) == path


def test_the_zip_stays_first_when_no_pyspark_is_installed_or_the_zip_cannot_be_read():
    path = [ZIP, PY4J, SITE]

    assert installed_first(path, versions(**{ZIP: "4.3.0"}), versions()) == path
    assert installed_first(path, versions(), versions(**{SITE: "4.3.0"})) == path


def test_a_path_without_spark_zip_is_left_as_it_is():
    path = ["", SITE]

    assert installed_first(path, versions(), versions(**{SITE: "4.3.0"})) == path


def test_versions_are_read_from_the_zip_and_from_a_directory(tmp_path: Path):
    archive = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("pyspark/version.py", '__version__ = "4.3.0"\n')
    (tmp_path / "site" / "pyspark").mkdir(parents=True)
    (tmp_path / "site" / "pyspark" / "version.py").write_text('__version__ = "4.3.0"\n')

    assert zip_version(str(archive)) == directory_version(str(tmp_path / "site")) == '__version__ = "4.3.0"\n'
    assert zip_version(str(tmp_path / "missing.zip")) is None
    assert directory_version(str(tmp_path)) is None
