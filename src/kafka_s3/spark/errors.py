"""Spark's failures in one line: what a Python worker raised, out of the Java and py4j text Spark wraps it in."""

from __future__ import annotations

import re

from kafka_s3.core.errors import EngineError

_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Unavailable|Failed|Incomplete)): (\S.*)$")


def root_message(exc: BaseException) -> str:
    """One line for an exception that is not the project's own: the last ``Kind: message`` line of a Python
    worker's traceback that Spark wraps (its own first line, "An exception was thrown from the Python worker:",
    says nothing), else the first line of the text."""
    text = str(exc)
    for marker in ("kafka_s3.core.errors.", "KafkaS3Error: "):
        if marker in text:
            tail = text.split(marker)[-1]
            return tail.splitlines()[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [m for m in map(_EXCEPTION_LINE.match, lines) if m]
    if raised and not lines[0].startswith(raised[-1].group(1)):
        kind, message = raised[-1].groups()
        return f"{kind.rsplit('.', 1)[-1]}: {message}"[:500] + " (--debug shows the trace)"
    return (lines[0][:500] + " (--debug shows the trace)") if lines else type(exc).__name__


def engine_error(exc: BaseException, what: str) -> EngineError:
    """``exc`` (raised by Spark running ``what``) as the project's error, with its root message."""
    return EngineError(f"{what} failed: {root_message(exc)}")
