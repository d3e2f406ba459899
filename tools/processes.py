"""Process and port helpers shared by the local services' launchers (``tools.services``, ``tools.kafka_broker``,
``tools.spark_cluster``): where their state lives, the binaries they run, and waiting for a process or a port."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard


def state_dir() -> Path:
    return Path(os.environ.get("KAFKA_S3_SERVICES_DIR", Path.cwd() / ".services")).resolve()


def _bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} is not installed: run `make services-up` (it installs the dev extras into .venv)")
    return found


def _terminate(pid: int | None, grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns once the process is gone."""
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.3)
        return sock.connect_ex((host, port)) == 0


def _alive(pid: int | None) -> TypeGuard[int]:  # alive implies a pid
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:  # a zombie child of ours is not alive
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return status != "Z"
    except OSError:
        return True


def _wait(what: str, check: Callable[[], bool], timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # health checks fail in many ways while a server starts
            last_error = exc
        time.sleep(0.25)
    tail = ""
    if log and log.exists():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    raise SystemExit(f"{what} did not become ready within {timeout:.0f}s ({last_error}){tail}")
