"""Operator logging: one line per event, secrets never printed.

Every secret value of the loaded configuration (passwords, secret keys, SASL settings, SSE-C keys) is registered
with :class:`RedactingFilter`, which scrubs it from any log record — including messages from libraries that echo
request parameters back in errors.
"""

from __future__ import annotations

import logging
import sys

from .config.model import REDACTED

_SECRETS: set[str] = set()


def register_secrets(values) -> None:
    _SECRETS.update(v for v in values if isinstance(v, str) and len(v) >= 4)


def redact(text: str) -> str:
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _SECRETS:
            message = record.getMessage()
            cleaned = redact(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
        return True


def setup(verbose: bool = False, debug: bool = False, stream=None) -> None:
    level = logging.DEBUG if debug else logging.INFO if verbose else logging.INFO
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("kafka_s3").setLevel(level)
    for noisy in ("py4j", "botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
