"""Issue 18 items 3 and 4: what a command and a Spark Python worker import.

pyarrow imports pandas (~40 MiB resident and 0.2-0.5 s of CPU per process) the first time ``pa.array``, ``pa.scalar``
or ``RecordBatch.from_pydict`` meets a value that is not Arrow data, only to ask whether it is a pandas object. No
kafka-s3 task hands pyarrow a pandas object, so a worker running kafka-s3's tasks, and a command's own process when it
runs the jobs itself, must not pay for it. Each check runs in a fresh interpreter (a subprocess), as a worker starts.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[3]  # the repository: the worker imports tests.support.formats

WORKER = textwrap.dedent(
    """
    import io
    import sys

    sys.path.insert(0, sys.argv[1])
    import pyspark.worker  # noqa: F401  (what Spark's Python daemon imports before it forks a worker)
    import pyarrow as pa
    from tests.support.formats import read_object, sample_records, sink_config, write_object

    from kafka_s3.core.converters.bytearray import ByteArrayConverter
    from kafka_s3.core.formats import REGISTRY
    from kafka_s3.spark.engine import _task_per_row

    def task(slot):
        # What backup and restore tasks do with records: build batches from Python values, convert them, write
        # every common format (a value role and the envelope) and read the objects back.
        records = sample_records(6)
        for name, envelope in [("json", False), ("bytearray", False), ("avro", True), ("parquet", True),
                               ("parquet", False), ("block_gzip", False), ("json", True)]:
            fmt_class = REGISTRY.resolve(name)
            config = sink_config(name, behavior__on__null__values="write")
            if envelope:
                fmt = fmt_class(config, envelope=True)
                chunks = [(records, None)]
            else:
                fmt = fmt_class(config, role="value", converter=ByteArrayConverter({}, is_key=False))
                ((_, values),) = fmt.converter.to_logical("orders", records.column("value")).runs
                chunks = [(records, values)]
            batches = read_object(fmt, write_object(fmt, chunks))
            assert sum(b.num_rows for b in batches) == 6, (name, envelope)
        yield f"slot {slot} done"

    slots = pa.ipc.open_stream(io.BytesIO(sys.stdin.buffer.read()))  # as Spark hands a worker its rows
    results = [b.column(0)[0].as_py() for b in _task_per_row(task)(iter(slots))]
    assert results == ["slot 0 done"], results
    print(",".join(sorted(m for m in ("pandas", "pyspark.pandas") if m in sys.modules)))
    """
)


def _slots() -> bytes:
    sink = pa.BufferOutputStream()
    batch = pa.RecordBatch.from_arrays([pa.array([0], pa.int64())], names=["id"])
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue())


def test_worker_task_keeps_pandas_unloaded():
    """A Spark Python worker running a kafka-s3 task (the engine's ``mapInArrow`` function) writes and reads every
    common format without importing pandas."""
    result = subprocess.run(
        [sys.executable, "-c", WORKER, str(ROOT)],
        input=_slots(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode().strip() == "", f"the worker imported {result.stdout.decode().strip()}"


WARM_UP = textwrap.dedent(
    """
    import io
    import sys

    import pyspark.worker  # noqa: F401
    import pyarrow as pa
    from kafka_s3.spark.session import _import_modules

    slots = pa.ipc.open_stream(io.BytesIO(sys.stdin.buffer.read()))
    assert [b.column(0)[0].as_py() for b in _import_modules(iter(slots))] == [1]
    print(",".join(m for m in ("pandas",) if m in sys.modules))
    """
)


def test_worker_warm_up_keeps_pandas_unloaded():
    """The job that imports the task modules in every Python worker of a local session as it starts
    (``warm_up_workers``) imports them without pandas."""
    result = subprocess.run([sys.executable, "-c", WARM_UP], input=_slots(), capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode().strip() == "", f"the warm-up imported {result.stdout.decode().strip()}"


def test_cli_help_imports_nothing_heavy():
    """``kafka-s3 backup --help`` answers without importing pandas, pyarrow, Spark or the Kafka and S3 clients."""
    script = textwrap.dedent(
        """
        import sys
        from kafka_s3.cli.main import main
        try:
            main(["backup", "--help"])
        except SystemExit:
            pass
        heavy = ("pandas", "numpy", "pyarrow", "pyspark", "boto3", "botocore", "confluent_kafka", "grpc")
        print(",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.strip() == "", f"`kafka-s3 backup --help` imported {result.stderr.strip()}"


def test_pandas_still_loads_for_pyarrow_apis_that_need_it():
    """Once pyarrow settled "no pandas", its pandas APIs still work: they import pandas themselves."""
    script = textwrap.dedent(
        """
        import sys
        import pyarrow as pa
        from kafka_s3.runtime.lean import keep_pandas_unloaded

        keep_pandas_unloaded()
        assert pa.array([1, None]).to_pylist() == [1, None] and "pandas" not in sys.modules
        series = pa.array([1, None]).to_pandas()
        assert "pandas" in sys.modules and series.isna().tolist() == [False, True]
        import pandas as pd

        table = pa.Table.from_pandas(pd.DataFrame({"a": [1.0, None]}))
        assert table.column("a").to_pylist() == [1.0, None]
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
