"""A Spark standalone cluster on loopback (one master, one worker) from pyspark's own distribution.

Used by the tests and the README's cluster example: ``python -m tools.spark_cluster up|down``. The master
URL is printed and written to ``.services/spark-master``. Each port is a cluster of its own (its own state directory
and lock), so the test suite's workers, each on a port of its own, never stop one another's cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.processes import _alive, _port_open, state_dir

DEFAULT_PORT = 27077


@dataclass
class Cluster:
    master_url: str
    master_pid: int
    worker_pid: int
    ui_port: int


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _start(role_class: str, args: list[str], log: Path) -> int:
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["SPARK_HOME"] = str(_spark_home())
    cmd = [str(_spark_home() / "bin" / "spark-class"), role_class, *args]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc.pid


def _workers_alive(ui_port: int) -> int:
    """Workers the master's UI lists as ALIVE; 0 while that UI does not answer with its JSON yet."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
        body = response.read()
    try:
        info = json.loads(body)
    except ValueError:
        return 0
    return sum(1 for w in info.get("workers", []) if w.get("state") == "ALIVE")


def cluster_dir(port: int = DEFAULT_PORT) -> Path:
    """Where the cluster on ``port`` keeps its pids and logs (the default port keeps the historical place)."""
    base = state_dir() / "spark"
    return base if port == DEFAULT_PORT else base / str(port)


@contextlib.contextmanager
def _turn(port: int) -> Iterator[Path]:
    base = cluster_dir(port)
    base.mkdir(parents=True, exist_ok=True)
    with open(base / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield base


def up(port: int = DEFAULT_PORT, cores: int = 2, memory: str = "2g") -> Cluster:
    with _turn(port) as base:
        return _up(base, port, cores, memory)


def _up(base: Path, port: int, cores: int, memory: str) -> Cluster:
    ui_port = port + 1
    pid_file = base / "pids.json"
    if pid_file.exists():
        pids = json.loads(pid_file.read_text())
        if _alive(pids["master"]) and _alive(pids["worker"]) and _port_open(port):
            return Cluster(f"spark://127.0.0.1:{port}", pids["master"], pids["worker"], ui_port)
        _down(base)
    master = _start(
        "org.apache.spark.deploy.master.Master",
        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
        base / "master.log",
    )
    deadline = time.monotonic() + 60
    while not _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.3)
    worker = _start(
        "org.apache.spark.deploy.worker.Worker",
        [
            f"spark://127.0.0.1:{port}",
            "--host",
            "127.0.0.1",
            "--webui-port",
            str(port + 2),
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--work-dir",
            str(base / "work"),
        ],
        base / "worker.log",
    )
    pid_file.write_text(json.dumps({"master": master, "worker": worker}))
    while time.monotonic() < deadline:
        try:
            if _workers_alive(ui_port) >= 1:
                url = f"spark://127.0.0.1:{port}"
                if port == DEFAULT_PORT:
                    (state_dir() / "spark-master").write_text(url + "\n")
                return Cluster(url, master, worker, ui_port)
        except OSError:
            pass
        time.sleep(0.5)
    _down(base)
    raise RuntimeError(f"Spark standalone cluster did not start; see {base}/master.log and worker.log")


def down(port: int = DEFAULT_PORT) -> None:
    with _turn(port) as base:
        _down(base)


def _down(base: Path) -> None:
    pid_file = base / "pids.json"
    if not pid_file.exists():
        return
    pids = json.loads(pid_file.read_text())
    for pid in (pids.get("worker"), pids.get("master")):
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids.values():
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.spark_cluster")
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    if args.command == "up":
        print(up(args.port).master_url)
    else:
        down(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
