"""What several commands take from their arguments: ``--set``, ``-b`` and ``-X`` overrides, ``-t`` topics and where
Spark runs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from kafka_s3 import api
from kafka_s3.core.errors import ConfigError


def pairs(items: Sequence[str] | None, flag: str = "--set") -> dict[str, str]:
    """``KEY=VALUE`` arguments (``--set``, ``-X``) as a mapping."""
    out = {}
    for pair in items or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def topic_names(args: argparse.Namespace) -> list[str]:
    """The topics ``-t`` names (each value may also be a comma-separated list, as ``--topics`` was)."""
    return [name.strip() for given in getattr(args, "topic", None) or () for name in given.split(",") if name.strip()]


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """The properties the command line sets over the file's: ``--set``, then ``-X`` (as the client settings that
    carry them), then ``-b``; and ``-t`` on the commands where it replaces the file's ``topics``."""
    out = pairs(getattr(args, "set", None))
    out.update(api.client_overrides(pairs(getattr(args, "client_properties", None), "-X")))
    if getattr(args, "metrics_port", None) is not None:
        out["metrics.port"] = str(args.metrics_port)
    if getattr(args, "bootstrap_server", None):
        out["bootstrap.servers"] = args.bootstrap_server
    named = topic_names(args)
    if named and getattr(args, "topic_overrides_config", False):
        out.update({"topics": ",".join(named), "topics.regex": ""})
    return out


def spark(args: argparse.Namespace) -> dict[str, Any]:
    """``--master`` / ``--remote`` as the API's keyword arguments."""
    return {"master": getattr(args, "master", None), "remote": getattr(args, "remote", None)}
