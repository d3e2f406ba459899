"""Secrets never reach a log line."""

import io
import json
import logging

import pytest

from kafka_s3.core import logs
from kafka_s3.core.config.sink import SINK


def test_registered_secrets_are_scrubbed_from_log_records():
    config = SINK.parse(
        {
            "name": "n",
            "topics": "t",
            "flush.size": "1",
            "s3.bucket.name": "b",
            "format.class": "json",
            "aws.secret.access.key": "very-secret-value",
            "sasl.password": "hunter2-pass",
        }
    )
    logs.register_secrets(config.secret_values())
    stream = io.StringIO()
    logs.setup(stream=stream)
    logger = logging.getLogger("kafka_s3.test")
    logger.info("connecting with %s and %s", "very-secret-value", "hunter2-pass")
    try:
        raise ValueError("boom very-secret-value")
    except ValueError:
        logger.exception("failed")
    text = stream.getvalue()
    assert "very-secret-value" not in text and "hunter2-pass" not in text
    assert text.count("[hidden]") >= 3
    assert logs.redact("x very-secret-value y") == "x [hidden] y"


@pytest.mark.issue(16, item=8)
def test_json_log_lines_carry_fields_and_no_secret():
    import json

    stream = io.StringIO()
    logs.register_secrets(["hunter2-json-secret"])
    logs.setup(stream=stream, fmt="json")
    logging.getLogger("kafka_s3.test").info(
        "committed %s password=hunter2-json-secret", "s3://b/k", extra={"records": 3, "first_offset": 0}
    )
    line = json.loads(stream.getvalue().strip())
    assert set(line) >= {"time", "level", "logger", "message", "records", "first_offset"}
    assert (line["level"], line["logger"], line["records"], line["first_offset"]) == ("INFO", "kafka_s3.test", 3, 0)
    assert line["message"].startswith("committed s3://b/k")
    assert "hunter2-json-secret" not in stream.getvalue()
    logs.setup()


@pytest.mark.issue(28, item=5)
def test_stderr_lines_of_other_programs_become_json_records_with_their_level_and_logger():
    lines = logs.StderrLines()
    said = [
        "WARNING: Using incubator modules: jdk.incubator.vector",
        "18:08:19 WARN NativeCodeLoader: Unable to load native-hadoop library",
        "18:08:20 ERROR Executor: Exception in task 0.0",
        "java.lang.RuntimeException: boom",
        "\tat org.apache.spark.Executor.run(Executor.scala:1)",
        "%4|1700000000.123|REQTMOUT|rdkafka#consumer-1| [thrd:x]: timed out",
        "kafka-s3 backup: error: the following arguments are required: --config/-c",
        "",
    ]
    docs = [json.loads(out) for out in map(lines.convert, said) if out is not None]
    assert [(d["level"], d["logger"]) for d in docs] == [
        ("WARNING", "jvm"),
        ("WARNING", "NativeCodeLoader"),
        ("ERROR", "Executor"),
        ("ERROR", "Executor"),  # a trace goes on the record it belongs to
        ("ERROR", "Executor"),
        ("WARNING", "librdkafka"),
        ("ERROR", "kafka_s3.cli"),
    ]
    assert docs[1]["message"] == "Unable to load native-hadoop library"
    assert docs[5]["facility"] == "REQTMOUT" and docs[5]["message"] == "[thrd:x]: timed out"
    assert docs[6]["message"] == "the following arguments are required: --config/-c"
    assert all({"time", "level", "logger", "message"} <= set(d) for d in docs)


def test_a_json_line_on_stderr_passes_as_it_is():
    record = '{"time": "t", "level": "INFO", "logger": "kafka_s3.backup", "message": "committed"}'
    assert logs.StderrLines().convert(record + "\n") == record
