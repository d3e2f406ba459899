"""What several commands take from their arguments: ``--set`` overrides and where Spark runs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from kafka_s3.core.errors import ConfigError


def pairs(items: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` arguments (``--set``) as a mapping."""
    out = {}
    for pair in items or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def overrides(args: argparse.Namespace) -> dict[str, str]:
    return pairs(getattr(args, "set", None))


def spark(args: argparse.Namespace) -> dict[str, Any]:
    """``--master`` / ``--remote`` as the API's keyword arguments."""
    return {"master": getattr(args, "master", None), "remote": getattr(args, "remote", None)}
