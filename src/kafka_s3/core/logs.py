"""Operator logging: one line per event, secrets never printed.

Every secret value of the loaded configuration (passwords, secret keys, SASL settings, SSE-C keys) is registered
here, and :class:`RedactingFormatter` scrubs it from every formatted line — messages, arguments and tracebacks,
including those of libraries that echo request parameters back in errors.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from kafka_s3.core.config.model import REDACTED, redact_text

_SECRETS: set[str] = set()


def register_secrets(values: Iterable[object]) -> None:
    _SECRETS.update(v for v in values if isinstance(v, str) and len(v) >= 4)


def redact(text: str) -> str:
    """``text`` without any registered secret, URL user-info password or JAAS password."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return redact_text(text)


class RedactingStream:
    """A text stream that scrubs every write with :func:`redact`: the CLI puts it in front of stdout and stderr so
    nothing it prints (summaries, status tables, progress, a ``--debug`` traceback) can carry a secret."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding... of the real stream
        return getattr(self.stream, name)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line for log shippers: ``time`` (ISO-8601, UTC), ``level``, ``logger``, ``message``, the
    record's own fields (``extra=``: object, topic, partition, records, offsets, bytes, seconds...) and ``trace``
    when there is one; secrets redacted like the text lines."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in doc:
                doc[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            doc["trace"] = self.formatException(record.exc_info)
        return redact(json.dumps(doc, ensure_ascii=False))


def json_record(level: str, logger: str, message: str, **fields: Any) -> str:
    """One log line as :class:`JsonFormatter` writes it, for what is not a logging record (the CLI's final error
    line, a line another program printed): ``time`` now, ``level``, ``logger``, ``message`` and ``fields``."""
    doc: dict[str, Any] = {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "level": level,
        "logger": logger,
        "message": message,
        **fields,
    }
    return redact(json.dumps(doc, ensure_ascii=False))


# `HH:MM:SS LEVEL name: message`: Spark's log4j lines (spark/log4j2.properties) and the text format of setup()
_TIMED_LINE = re.compile(r"^\d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL) ([^\s:]+): (.*)$")
# librdkafka's own log lines: `%<syslog level>|<epoch>|<facility>|<client>| message`
_RDKAFKA_LINE = re.compile(r"^%(\d)\|[\d.]+\|([^|]*)\|([^|]*)\|\s?(.*)$")
# the JVM's own warnings (`WARNING: Using incubator modules: ...`) and Python's (`/path/module.py:12: UserWarning: ...`)
_JVM_WARNING = re.compile(r"^WARNING: ")
_PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")
# the lines that go on a record already begun: a Java or Python trace's frames, its exception, an indented detail
_CONTINUATION = re.compile(r"^(\s|at |Caused by|Suppressed|\.\.\. \d+ more|\w+(\.\w+)+(: |$)|\w*(Error|Exception)\b)")
_LEVELS = {"WARN": "WARNING", "FATAL": "CRITICAL", "TRACE": "DEBUG"}
_SYSLOG_LEVELS = ("CRITICAL", "CRITICAL", "CRITICAL", "ERROR", "WARNING", "INFO", "INFO", "DEBUG")
_ERROR_LINE = re.compile(r"^kafka-s3(?: [\w ]+)?: error: ")  # the CLI's, and argparse's (`kafka-s3 backup: error:`)


class StderrLines:
    """Turns the lines other programs print on stderr (the JVM and Spark's log4j, Spark's Python workers, librdkafka,
    Python warnings) into JSON records for ``--log-format json``: the level and logger read from the line where its
    form says them, a trace's lines as the record they continue, anything else a ``stderr`` WARNING (nothing is
    printed there on a good day). A line that is a JSON object already passes as it is."""

    def __init__(self) -> None:
        self.level = "WARNING"
        self.logger = "stderr"

    def convert(self, line: str) -> str | None:
        """The JSON line for ``line`` (None for a blank one)."""
        text = line.rstrip("\r\n")
        if not text.strip():
            return None
        if text.startswith("{"):
            try:
                if isinstance(json.loads(text), dict):
                    return text
            except ValueError:
                pass
        fields: dict[str, Any] = {}
        if found := _TIMED_LINE.match(text):
            self.level = _LEVELS.get(found[1], found[1])
            self.logger, text = found[2], found[3]
        elif found := _RDKAFKA_LINE.match(text):
            self.level, self.logger = _SYSLOG_LEVELS[int(found[1])], "librdkafka"
            fields = {"facility": found[2], "client": found[3]}
            text = found[4]
        elif found := _ERROR_LINE.match(text):
            self.level, self.logger, text = "ERROR", "kafka_s3.cli", text[found.end() :]
        elif _JVM_WARNING.match(text):
            self.level, self.logger = "WARNING", "jvm"
        elif _PYTHON_WARNING.match(text):
            self.level, self.logger = "WARNING", "py.warnings"
        elif text.startswith("Traceback "):
            self.level, self.logger = "ERROR", "stderr"
        elif not _CONTINUATION.match(text):
            self.level, self.logger = "WARNING", "stderr"
        return json_record(self.level, self.logger, text, **fields)


LOG_FORMATS = ("text", "json")


def setup(verbose: bool = False, debug: bool = False, stream: TextIO | None = None, fmt: str = "text") -> None:
    level = logging.DEBUG if debug else logging.INFO if verbose else logging.INFO
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("kafka_s3").setLevel(level)
    for noisy in ("py4j", "botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
