"""The user's Spark server, the pure parts: where its state lives, what it records, which mode a command runs in.

A plain command (no ``--master``, no ``--remote``, no ``$SPARK_REMOTE``) runs its jobs on a Spark Connect server of
the user's own, started on first use and reused, so that only the first command pays Spark's start-up
(:mod:`kafka_s3.spark.server` starts, watches and stops it). This module decides and records, without processes,
sockets or Spark: the state file (``state.json`` in :func:`state_dir`), the identity a command needs the server to
have (versions, ``spark.*`` settings, the environment its Python workers read), and the mode of a command.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from kafka_s3.core.errors import ConfigError

SERVER_ENV = "KAFKA_S3_SPARK_SERVER"
"""``0`` (or ``false``/``no``/``off``): plain commands run Spark in-process (``local[*]``), as ``--master`` does."""
STATE_DIR_ENV = "KAFKA_S3_SPARK_SERVER_DIR"
"""The server's state directory (default ``$XDG_STATE_HOME/kafka-s3/server``, ``~/.local/state/kafka-s3/server``)."""
IDLE_TIMEOUT_ENV = "KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT"
"""How long the server waits without a command before it stops itself: seconds, or a number with s, m or h."""
DEFAULT_IDLE_TIMEOUT_S = 30 * 60.0
STATE_FORMAT = 1

Mode = Literal["server", "remote", "classic"]
OFF = frozenset({"0", "false", "no", "off"})

# What a task in the server's Python workers reads from its environment rather than from the settings the driver
# pickles: the AWS default credentials chain and botocore's proxies. A server started under other values would run
# the command's tasks with another identity, so they are part of what a command needs (kept as digests, never values).
_WORKER_ENVIRONMENT = re.compile(r"^(AWS_[A-Z0-9_]+|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy)$")


def choose_mode(master: str | None, remote: str | None, environ: Mapping[str, str]) -> Mode:
    """Where a command's jobs run: on a Spark Connect URL it was given (``remote``: ``--remote``, ``--master sc://``,
    ``$SPARK_REMOTE``), in-process (``classic``: ``--master``, ``$KAFKA_S3_SPARK_MASTER``, or the opt-out
    ``$KAFKA_S3_SPARK_SERVER=0``), else on the user's own server (``server``)."""
    if remote or (master and master.startswith("sc://")):
        return "remote"
    if master:
        return "classic"
    if environ.get("SPARK_REMOTE"):
        return "remote"
    if environ.get("KAFKA_S3_SPARK_MASTER"):
        return "classic"
    if environ.get(SERVER_ENV, "1").strip().lower() in OFF:
        return "classic"
    return "server"


def state_dir(environ: Mapping[str, str], home: Path) -> Path:
    """One server per user: ``$KAFKA_S3_SPARK_SERVER_DIR``, else ``$XDG_STATE_HOME/kafka-s3/server``, else
    ``~/.local/state/kafka-s3/server``."""
    configured = environ.get(STATE_DIR_ENV)
    if configured:
        return Path(configured)
    base = environ.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "kafka-s3" / "server"


def idle_timeout(environ: Mapping[str, str]) -> float:
    """Seconds of idleness after which the server stops itself (``$KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT``: ``90``,
    ``90s``, ``20m``, ``1h``; default 30 minutes). A value that is not one is a :class:`ConfigError` naming the
    variable."""
    text = environ.get(IDLE_TIMEOUT_ENV, "").strip().lower()
    if not text:
        return DEFAULT_IDLE_TIMEOUT_S
    found = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([smh]?)", text)
    if not found or float(found.group(1)) <= 0:
        raise ConfigError(
            f"{IDLE_TIMEOUT_ENV}={text!r}: expected a positive duration such as 90s, 20m or 1h", key=IDLE_TIMEOUT_ENV
        )
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


def environment_digests(environ: Mapping[str, str]) -> dict[str, str]:
    """A digest of each variable the server's Python workers read from their environment (see above)."""
    return {
        name: hashlib.sha256(value.encode()).hexdigest()[:16]
        for name, value in sorted(environ.items())
        if _WORKER_ENVIRONMENT.match(name)
    }


@dataclass(frozen=True)
class ServerIdentity:
    """What a server was started with, and what a command needs of it: the same versions (kafka-s3 and its code,
    pyspark, the Python of the workers), the same ``spark.*`` settings, the same worker environment."""

    version: str
    settings: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)

    def differences(self, wanted: ServerIdentity) -> list[str]:
        """What differs between this (the running server) and ``wanted`` (a command's), as a reader would name it;
        empty when the command can run on this server. Names only: no setting's or variable's value."""
        out = []
        if self.version != wanted.version:
            out.append(f"version {self.version} (this command: {wanted.version})")
        for key in sorted(set(self.settings) | set(wanted.settings)):
            if self.settings.get(key) != wanted.settings.get(key):
                out.append(key)
        for name in sorted(set(self.environment) | set(wanted.environment)):
            if self.environment.get(name) != wanted.environment.get(name):
                out.append(f"${name}")
        return out


@dataclass(frozen=True)
class ServerState:
    """The server as its state file records it. ``pid`` is its supervisor's (the leader of its process group: the
    JVM and the Python workers are in it too); ``ready`` once it accepts connections (and its workers are warm);
    ``exit_code`` when the JVM ended without being asked to."""

    pid: int
    port: int
    started: float  # epoch seconds
    identity: ServerIdentity
    log: str
    idle_timeout_s: float
    ready: bool = False
    exit_code: int | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def to_json(self) -> str:
        doc = {
            "format": STATE_FORMAT,
            "pid": self.pid,
            "port": self.port,
            "started": self.started,
            "version": self.identity.version,
            "settings": dict(self.identity.settings),
            "environment": dict(self.identity.environment),
            "log": self.log,
            "idle_timeout_s": self.idle_timeout_s,
            "ready": self.ready,
            "exit_code": self.exit_code,
        }
        return json.dumps(doc, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServerState | None:
        """The state ``text`` records, or None when it is not a state file of this format (a torn or foreign file is
        no server: the caller starts a new one)."""
        try:
            doc: Any = json.loads(text)
            if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
                return None
            exit_code = doc.get("exit_code")
            return cls(
                pid=int(doc["pid"]),
                port=int(doc["port"]),
                started=float(doc["started"]),
                identity=ServerIdentity(
                    version=str(doc["version"]),
                    settings={str(k): str(v) for k, v in dict(doc.get("settings") or {}).items()},
                    environment={str(k): str(v) for k, v in dict(doc.get("environment") or {}).items()},
                ),
                log=str(doc["log"]),
                idle_timeout_s=float(doc["idle_timeout_s"]),
                ready=bool(doc.get("ready")),
                exit_code=None if exit_code is None else int(exit_code),
            )
        except (ValueError, TypeError, KeyError):
            return None

    def with_(self, **changes: Any) -> ServerState:
        return replace(self, **changes)
