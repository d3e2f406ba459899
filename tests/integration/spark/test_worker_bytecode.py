"""Issue 30 target 3 (memory): the Python workers of a kafka-s3 session run pyspark from the installed package's
bytecode, not from Spark's ``pyspark.zip`` (a zip holds no bytecode: each worker compiled pyspark from source, 18 MiB
more resident and 0.2 CPU-s more per worker, and the daemon 12 MiB and 0.7 CPU-s more)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.issue(30)]


def _pyspark_origin(_: object):  # runs in a Python worker of the session
    import pyspark

    yield pyspark.__file__


def test_python_workers_of_a_session_import_the_installed_pyspark_not_the_zip(spark):
    origins = spark.sparkContext.parallelize(range(2), 2).mapPartitions(_pyspark_origin).collect()

    assert origins
    assert not [origin for origin in origins if "pyspark.zip" in origin], origins
