"""Issue 16 item 3: a task's own error crosses the Spark boundary as a result row and is raised again on the driver
with its class, message and context; any other exception still fails the task (Spark retries those)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_s3.core.errors import BackupIncomplete, ConfigError, FormatError, KafkaError, KafkaS3Error
from kafka_s3.io.schema_registry.client import SchemaRegistryUnavailable
from kafka_s3.spark.engine import ERROR_MARK, _task_per_row, task_error


def rows(task, slots=(0,)):
    batches = [pa.RecordBatch.from_pydict({"id": list(slots)})]
    return [b.column(0)[0].as_py() for b in _task_per_row(task)(iter(batches))]


@pytest.mark.parametrize(
    "error",
    [
        ConfigError("bad value", key="some.key"),
        FormatError("truncated", object_key="topics/t/0.avro", position="offset 3"),
        KafkaError("produce failed"),
        SchemaRegistryUnavailable("cannot reach http://r:8081"),
        BackupIncomplete("a hole"),
    ],
)
def test_task_errors_come_back_as_the_same_error(error):
    def task(slot):
        yield "first"
        raise error

    out = rows(task)
    assert out[0] == "first" and out[1].startswith(ERROR_MARK) and len(out) == 2
    rebuilt = task_error(out[1])
    assert type(rebuilt) is type(error)
    assert str(rebuilt) == str(error)
    assert rebuilt.exit_code == error.exit_code
    for name, value in vars(error).items():
        if isinstance(value, (str, int, type(None))):
            assert getattr(rebuilt, name) == value


def test_other_exceptions_still_fail_the_task():
    def task(slot):
        raise OSError("connection reset")
        yield ""

    with pytest.raises(OSError):
        rows(task)


def test_an_unknown_error_module_falls_back_to_the_base_error():
    row = ERROR_MARK + '{"module": "os", "kind": "system", "message": "m", "attributes": {}}'
    rebuilt = task_error(row)
    assert type(rebuilt) is KafkaS3Error and str(rebuilt) == "m"
