"""Secrets never reach a log line."""

import io
import logging

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
