"""Small runs: the wall time of a 4-record ``kafka-s3 backup --once`` and of its restore, as CLI subprocesses, on a
local session (``local[*]``: a JVM and Python workers per command), through a Spark Connect server (``--remote``),
and as plain commands on the user's Spark server (``server``: started by the first command, reused by the next).

    .venv/bin/python bench/small_runs.py --rounds 3                       # starts a Connect server if none is given
    .venv/bin/python bench/small_runs.py --remote sc://127.0.0.1:21502 --rounds 5
    .venv/bin/python bench/small_runs.py --modes server --rounds 3        # the user's server only

Each round backs up a fresh 1-partition topic of 4 records into a fresh bucket and restores it into a new topic,
once per mode, the modes alternating so that both see the same load. Prints one line per run and a Markdown table
of medians; the split comes from the CLI's INFO lines (session start, time inside the Spark job). Nothing asserted.

The server mode (a state directory of the bench's own) measures, per round: the first command with no server (the
backup: it starts the server in the background and runs in-process) and the command right after it (the restore);
then, once the server is ready, a backup and a restore on it; and the alternative of waiting for the server
(``kafka-s3 server start``, then the backup).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from common import (
    ROOT,
    Services,
    create_bucket,
    create_topic,
    delete_topics,
    kafka_kind_default,
    remove_bucket,
    services_up,
)

SESSION = re.compile(r"spark session ready in ([0-9.]+)s")
JOB = re.compile(r"spark job ran in ([0-9.]+)s|restore job: \d+ records in ([0-9.]+)s")


def produce(services: Services, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": services.bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"k{i}".encode(), value=f'{{"i":{i}}}'.encode())
    producer.flush()


def properties(services: Services, bucket: str, topic: str, restore: bool) -> str:
    props = {
        "name": f"small-{bucket}-{'r' if restore else 'b'}",
        "topics": topic,
        "s3.bucket.name": bucket,
        "s3.region": services.region,
        "bootstrap.servers": services.bootstrap,
        "format.class": "json",
        "flush.size": "3",
    }
    if services.s3_endpoint:
        props["store.url"] = services.s3_endpoint
    if services.access_key and services.secret_key:  # tasks on a Connect server do not see this environment
        props.update({"aws.access.key.id": services.access_key, "aws.secret.access.key": services.secret_key})
    if restore:
        props.update({"topic.rename": f"{topic}:{topic}-restored", "topic.creation.enable": "true"})
    return "".join(f"{k}={v}\n" for k, v in props.items())


SERVER = "server"


def server_env(work: Path) -> dict[str, str]:
    """Plain commands on a Spark server of the bench's own (never the user's)."""
    return {
        "KAFKA_S3_SPARK_SERVER": "1",
        "KAFKA_S3_SPARK_SERVER_DIR": str(work / "spark-server"),
        "KAFKA_S3_CONNECT_SESSIONS": str(work / "spark-server-sessions.json"),
    }


def server_cli(services: Services, work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", "server", *args],
        capture_output=True,
        text=True,
        env={**services.environ(), **server_env(work)},
        check=False,
        timeout=300,
    )


def wait_server_ready(services: Services, work: Path, timeout: float = 300) -> float:
    """Seconds until the bench's server answers as ready (polling ``kafka-s3 server status --json``)."""
    import json

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        doc = json.loads(server_cli(services, work, "status", "--json").stdout or "{}")
        if doc.get("ready"):
            return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"the Spark server was not ready within {timeout:.0f}s")


def run(services: Services, work: Path, mode: str) -> dict[str, dict[str, float]]:
    tag = uuid.uuid4().hex[:10]
    topic = bucket = f"small-{tag}"
    create_topic(services, topic, 1)
    produce(services, topic)
    create_bucket(services, bucket)
    where = [] if mode == SERVER else ["--remote", mode] if mode.startswith("sc://") else ["--master", mode]
    env = {**services.environ(), "PYSPARK_PYTHON": sys.executable, **(server_env(work) if mode == SERVER else {})}
    out: dict[str, dict[str, float]] = {}
    try:
        for kind in ("backup", "restore"):
            config = work / f"{tag}-{kind}.properties"
            config.write_text(properties(services, bucket, topic, kind == "restore"))
            extra = ["--once"] if kind == "backup" else []
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "kafka_s3.cli", kind, *extra, "--no-progress", *where, "--config", str(config)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            wall = time.monotonic() - started
            if result.returncode != 0:
                raise RuntimeError(f"{kind} on {mode} failed ({result.returncode}):\n{result.stderr[-3000:]}")
            session = SESSION.search(result.stderr)
            job = JOB.search(result.stderr)
            out[kind] = {
                "wall": wall,
                "session": float(session.group(1)) if session else float("nan"),
                "job": float(next(g for g in job.groups() if g)) if job else float("nan"),
                "load": os.getloadavg()[0],
                "on_server": float("(Spark Connect " in result.stderr),
            }
            where_ran = "" if mode != SERVER else " (on the server)" if out[kind]["on_server"] else " (in-process)"
            print(
                f"{mode:<24} {kind:<8} wall {wall:6.2f}s  session {out[kind]['session']:6.2f}s  "
                f"job {out[kind]['job']:6.2f}s  load {out[kind]['load']:.1f}{where_ran}",
                flush=True,
            )
    finally:
        remove_bucket(services, bucket)
        delete_topics(services, [topic, f"{topic}-restored"])
    return out


def measure(services: Services, work: Path, master: str, remote: str, rounds: int) -> dict:
    """``rounds`` rounds of a small backup + restore, alternating ``master`` and the Connect server ``remote``.

    The server's first job of its shared session starts its Python workers: that run is a warm-up, not counted (every
    later command of any user finds them warm)."""
    run(services, work, remote)
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"local": [], "remote": []}
    for _ in range(rounds):
        runs["local"].append(run(services, work, master))
        runs["remote"].append(run(services, work, remote))
    return {"master": master, "remote": remote, "rounds": rounds, "runs": runs}


def measure_server(services: Services, work: Path, rounds: int) -> dict:
    """``rounds`` rounds of plain commands on the bench's own Spark server: from no server, the first command (the
    backup) and the one right after it (the restore), then both again once the server is ready; and the first
    command when it waits for the server instead (``server start``, then the backup: ``start_s`` + its wall)."""
    out: dict[str, list] = {"cold": [], "warm": [], "ready_s": [], "waited": [], "start_s": []}
    try:
        for _ in range(rounds):
            server_cli(services, work, "stop")
            started = time.monotonic()
            out["cold"].append(run(services, work, SERVER))
            out["ready_s"].append(time.monotonic() - started + wait_server_ready(services, work))
            out["warm"].append(run(services, work, SERVER))
            server_cli(services, work, "stop")
            started = time.monotonic()
            result = server_cli(services, work, "start")
            if result.returncode != 0:
                raise RuntimeError(f"kafka-s3 server start failed:\n{result.stdout}{result.stderr[-3000:]}")
            out["start_s"].append(time.monotonic() - started)
            out["waited"].append(run(services, work, SERVER))
            print(f"server start (waited for) {out['start_s'][-1]:6.2f}s", flush=True)
    finally:
        server_cli(services, work, "stop")
    return out


def medians(runs: list[dict[str, dict[str, float]]], kind: str) -> dict[str, float]:
    """Median wall, session start, job time and load of one command (``backup``/``restore``) over rounds."""
    return {k: statistics.median(r[kind][k] for r in runs) for k in ("wall", "session", "job", "load")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--remote", default=os.environ.get("SPARK_REMOTE"), help="Spark Connect URL (default: start one)"
    )
    parser.add_argument("--master", default="local[*]", help="the local mode's master (default local[*])")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="local,remote,server", help="of local, remote, server (default: all)")
    args = parser.parse_args(argv)
    modes = set(args.modes.split(","))
    # Running services are used as they are (their env file's settings): never restarted, whichever Kafka they run.
    os.environ.setdefault("KAFKA_S3_SERVICES_DIR", str(ROOT / ".services"))
    env_file = Path(os.environ["KAFKA_S3_SERVICES_DIR"]) / "env"
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            if key and key not in ("SPARK_REMOTE",):
                os.environ.setdefault(key, value)
    work = ROOT / "bench" / "results" / f"small-{time.strftime('%Y%m%dT%H%M%S')}.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(kafka_kind_default(), work)
    remote = args.remote
    if "remote" in modes and not remote:
        from tools.services import DEFAULT_SPARK_CONNECT_PORT, start_spark_connect

        started = time.monotonic()
        remote = start_spark_connect(int(os.environ.get("KAFKA_S3_DEV_SPARK_CONNECT_PORT", DEFAULT_SPARK_CONNECT_PORT)))
        print(f"Spark Connect server {remote} up in {time.monotonic() - started:.1f}s (stop: make services-down)")
    if "remote" in modes:
        run(services, work, remote)  # the server session's first run starts its Python workers: not counted
    # The modes alternate round by round, so that each sees the same load.
    server: dict[str, list] = {}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"local": [], "remote": []}
    for _ in range(args.rounds):
        if "server" in modes:
            for key, values in measure_server(services, work, 1).items():
                server.setdefault(key, []).extend(values)
        if "local" in modes:
            runs["local"].append(run(services, work, args.master))
        if "remote" in modes:
            runs["remote"].append(run(services, work, remote))
    if server:
        table_server(server)
    if not modes & {"local", "remote"}:
        return 0
    print("\n| mode | command | wall (median) | session start | inside the Spark job | load (1 min) |")
    print("|---|---|---|---|---|---|")
    for mode, done in runs.items():
        for kind in ("backup", "restore") if done else ():
            median = medians(done, kind)
            print(
                f"| {'--remote' if mode == 'remote' else args.master} | {kind} | {median['wall']:.1f} s | "
                f"{median['session']:.1f} s | {median['job']:.1f} s | {median['load']:.1f} |"
            )
    return 0


def table_server(result: dict) -> None:
    def median(runs: list[dict[str, dict[str, float]]], kind: str) -> str:
        return f"{statistics.median(r[kind]['wall'] for r in runs):.1f} s"

    def ran(runs: list[dict[str, dict[str, float]]], kind: str) -> str:
        on = sum(int(r[kind]["on_server"]) for r in runs)
        return f"{on} of {len(runs)} on the server"

    print("\n| plain commands (the user's Spark server) | backup wall (median) | restore wall (median) | where |")
    print("|---|---|---|---|")
    cold, warm, waited = result["cold"], result["warm"], result["waited"]
    print(
        f"| first command (no server; starts it) and the next, right after | {median(cold, 'backup')} | "
        f"{median(cold, 'restore')} | backup {ran(cold, 'backup')}, restore {ran(cold, 'restore')} |"
    )
    warm_walls = f"{median(warm, 'backup')} | {median(warm, 'restore')}"
    print(f"| once the server is ready | {warm_walls} | backup {ran(warm, 'backup')}, restore {ran(warm, 'restore')} |")
    start = statistics.median(result["start_s"])
    print(
        f"| the first command waiting for the server instead: server start {start:.1f} s + | "
        f"{median(waited, 'backup')} | {median(waited, 'restore')} | {ran(waited, 'backup')} |"
    )
    print(f"server ready after the first command's start: median {statistics.median(result['ready_s']):.1f} s")


if __name__ == "__main__":
    sys.exit(main())
