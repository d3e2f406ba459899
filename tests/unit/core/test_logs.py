"""Secrets never reach a log line."""

import io
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
