"""The Kafka brokers of the local services: ``noida-db`` (a single binary speaking the Kafka protocol, from PyPI) and
Apache Kafka (KRaft, broker and controller in one JVM) from the distribution at ``KAFKA_S3_KAFKA_HOME`` (default
``../shared/kafka`` beside the repository). ``tools.services`` chooses between them; the tests and the benchmark also
start brokers of their own with ``start_apache_kafka``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from tools.processes import _alive, _bin, _port_open, _terminate, _wait, state_dir

REPO_ROOT = Path(__file__).resolve().parents[1]


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


# ---------------------------------------------------------------------------------------------------- Kafka (Apache)
def default_kafka_home() -> Path:
    return (REPO_ROOT.parent / "shared" / "kafka").resolve()


def kafka_home(environ: dict[str, str] | None = None) -> Path:
    """The Apache Kafka distribution: ``KAFKA_S3_KAFKA_HOME``, else ``../shared/kafka`` beside the repository."""
    env = os.environ if environ is None else environ
    configured = env.get("KAFKA_S3_KAFKA_HOME")
    return Path(configured).resolve() if configured else default_kafka_home()


def java_major() -> int | None:
    """The major version of ``java`` on the PATH (None when there is none)."""
    java = shutil.which("java")
    if not java:
        return None
    result = subprocess.run([java, "-version"], capture_output=True, text=True)
    for token in (result.stderr + result.stdout).split():
        version = token.strip('"')
        if version[:1].isdigit():
            parts = version.split(".")
            major = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]
            digits = "".join(c for c in major if c.isdigit())
            return int(digits) if digits else None
    return None


def apache_unavailable(environ: dict[str, str] | None = None) -> str | None:
    """Why Apache Kafka cannot run here (no distribution, no Java 17+), or None when it can."""
    home = kafka_home(environ)
    if not (home / "bin" / "kafka-server-start.sh").exists() or not (home / "bin" / "kafka-storage.sh").exists():
        return f"no Kafka distribution at {home} (set KAFKA_S3_KAFKA_HOME to one)"
    major = java_major()
    if major is None or major < 17:
        return f"Apache Kafka at {home} needs Java 17+, found {'no java' if major is None else f'Java {major}'}"
    return None


def _apache_dir() -> Path:
    return state_dir() / "apache-kafka"


def apache_pid(directory: Path | None = None) -> int | None:
    try:
        return int(((directory or _apache_dir()) / "pid").read_text())
    except (OSError, ValueError):
        return None


def _apache_port(directory: Path) -> int | None:
    try:
        for line in (directory / "server.properties").read_text().splitlines():
            if line.startswith("advertised.listeners="):
                return int(line.rsplit(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def _server_properties(directory: Path, port: int, controller_port: int, extra: str) -> str:
    return f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={directory / "data"}
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
{extra}
"""


def start_apache_kafka(
    port: int, directory: Path | None = None, home: Path | None = None, extra_properties: str = ""
) -> str:
    """Start (idempotently) Apache Kafka in KRaft mode, broker and controller in one JVM, on 127.0.0.1:``port``
    (controller: ``port + 1``), state in ``directory`` (default ``.services/apache-kafka``). Each start formats an
    empty log. Returns the bootstrap servers once the broker answers metadata requests."""
    directory = (directory or _apache_dir()).resolve()
    home = home or kafka_home()
    bootstrap = f"127.0.0.1:{port}"
    if _alive(apache_pid(directory)):
        if _apache_port(directory) == port and _port_open(port):
            _wait("Apache Kafka", lambda: kafka_healthy(bootstrap), 60, directory / "server.log")
            return bootstrap
        stop_apache_kafka(directory)  # ours, but on another port: restart it
    for taken in (port, port + 1):
        if _port_open(taken):
            raise SystemExit(f"Apache Kafka cannot start: port {taken} on 127.0.0.1 is in use")
    shutil.rmtree(directory / "data", ignore_errors=True)
    (directory / "data").mkdir(parents=True)
    (directory / "logs").mkdir(exist_ok=True)
    properties = directory / "server.properties"
    properties.write_text(_server_properties(directory, port, port + 1, extra_properties))
    env = {**os.environ, "LOG_DIR": str(directory / "logs")}
    env.setdefault("KAFKA_HEAP_OPTS", "-Xmx1G -Xms256m")
    for name in ("JMX_PORT", "KAFKA_JMX_OPTS"):
        env.pop(name, None)
    storage = str(home / "bin" / "kafka-storage.sh")
    cluster_id = subprocess.run([storage, "random-uuid"], capture_output=True, text=True, env=env)
    formatted = subprocess.run(
        [storage, "format", "-t", cluster_id.stdout.strip(), "-c", str(properties)],
        capture_output=True,
        text=True,
        env=env,
    )
    if cluster_id.returncode != 0 or formatted.returncode != 0:
        raise SystemExit(
            f"Apache Kafka storage format failed:\n{cluster_id.stderr}{formatted.stdout}{formatted.stderr}"
        )
    log = directory / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(home / "bin" / "kafka-server-start.sh"), str(properties)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    (directory / "pid").write_text(str(proc.pid))

    def ready() -> bool:
        if proc.poll() is not None:
            raise SystemExit(f"Apache Kafka exited during start-up (code {proc.returncode}); see {log}")
        return "Kafka Server started" in log.read_text(errors="replace") and kafka_healthy(bootstrap)

    _wait("Apache Kafka", ready, 90, log)
    return bootstrap


def stop_apache_kafka(directory: Path | None = None) -> None:
    directory = directory or _apache_dir()
    pid = apache_pid(directory)
    _terminate(pid, grace=60)
    (directory / "pid").unlink(missing_ok=True)
