"""Spark's Python daemon, run from the installed pyspark's bytecode when that is the same pyspark as Spark's zip.

Spark starts its Python daemon (``python -m pyspark.daemon``, which forks the workers) with
``$SPARK_HOME/python/lib/pyspark.zip`` first on ``PYTHONPATH``. A zip holds no bytecode, so the daemon compiles
pyspark from source, and each worker compiles what it imports after the fork: measured, 0.89 CPU-s and 42 MiB for
``import pyspark.daemon`` from the zip against 0.17 CPU-s and 30 MiB from the installed package (bench/README.md,
"Memory"). With a pip-installed PySpark the zip is the installed package's own source; the session names this module
as ``spark.python.daemon.module``, and it moves the zip behind the installed package on ``sys.path`` when both hold the
same ``pyspark/version.py``, then runs Spark's daemon. Any other Spark (another pyspark installed, none, a zip
that cannot be read) keeps the zip first, as Spark set it.

Only the standard library is imported before Spark's daemon runs: everything imported here is in every worker.
"""

from __future__ import annotations

import os
import runpy
import sys
import zipfile
from collections.abc import Callable

VERSION_FILE = "pyspark/version.py"


def spark_zip(path: str) -> bool:
    """Whether a ``sys.path`` entry is Spark's own pyspark.zip."""
    return os.path.basename(path) == "pyspark.zip"


def zip_version(path: str) -> str | None:
    """The text of ``pyspark/version.py`` inside a zip, None when it cannot be read."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read(VERSION_FILE).decode()
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def directory_version(path: str) -> str | None:
    """The text of ``pyspark/version.py`` under a directory of ``sys.path``, None when there is none."""
    try:
        with open(os.path.join(path, VERSION_FILE), encoding="utf-8") as source:
            return source.read()
    except (OSError, UnicodeDecodeError):
        return None


def installed_first(
    path: list[str],
    read_zip: Callable[[str], str | None] = zip_version,
    read_directory: Callable[[str], str | None] = directory_version,
) -> list[str]:
    """``path`` with Spark's pyspark.zip moved behind the first directory holding the same pyspark, else unchanged."""
    archives = [entry for entry in path if spark_zip(entry)]
    if not archives:
        return path
    version = read_zip(archives[0])
    if version is None:
        return path
    installed = next((entry for entry in path if not spark_zip(entry) and read_directory(entry) is not None), None)
    if installed is None or read_directory(installed) != version:
        return path
    return [entry for entry in path if not spark_zip(entry)] + archives


def main() -> None:
    """Run Spark's daemon (``pyspark.daemon``, with its arguments) from the installed pyspark when it is the zip's."""
    sys.path[:] = installed_first(sys.path)
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
