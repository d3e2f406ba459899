"""Shared plumbing of the benchmark: services, Kafka/S3 helpers, and running a subprocess while sampling its memory.

Nothing here asserts anything about speed: the harness measures and reports, the report compares with baselines
measured in the same run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the services (tools/, outside the wheel) import from the repository root
    sys.path.append(str(ROOT))
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1024 * 1024


# ---------------------------------------------------------------------------------------------------- services
@dataclass
class Services:
    bootstrap: str
    s3_endpoint: str | None
    access_key: str | None
    secret_key: str | None
    region: str
    external_kafka: bool
    external_s3: bool
    kafka_kind: str = "apache"  # "apache" or "noida": the broker the report names

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KAFKA_BOOTSTRAP_SERVERS"] = self.bootstrap
        env["AWS_REGION"] = self.region
        # Every command measured runs Spark in-process (its process tree is its whole cost), never on the user's
        # Spark server; bench/small_runs.py's server mode removes this.
        env["KAFKA_S3_SPARK_SERVER"] = "0"
        for key, value in (
            ("AWS_ENDPOINT_URL_S3", self.s3_endpoint),
            ("AWS_ACCESS_KEY_ID", self.access_key),
            ("AWS_SECRET_ACCESS_KEY", self.secret_key),
        ):
            if value:
                env[key] = value
        return env

    def describe(self) -> dict:
        return {
            "kafka": f"{KAFKA_LABELS.get(self.kafka_kind, self.kafka_kind)} at {self.bootstrap}"
            + (" (external)" if self.external_kafka else " (local)"),
            "kafka_kind": self.kafka_kind,
            "s3": (self.s3_endpoint or "AWS") + (" (external)" if self.external_s3 else " (SeaweedFS, local)"),
        }


KAFKA_LABELS = {"apache": "Apache Kafka", "noida": "noida-db"}
OWN_PORTS = {"apache": 21292, "noida": 21192}  # the bench's own broker (``--own-kafka``), beside the shared services


def running_kafka_kind() -> str | None:
    """The broker the shared services run now (read-only: pid files and ports), None when none runs."""
    from tools import services as dev

    os.environ.setdefault("KAFKA_S3_SERVICES_DIR", str(ROOT / ".services"))
    if dev._alive(dev.apache_pid()):
        return "apache"
    if dev._alive(dev.kafka_pid()):
        return "noida"
    return None


def kafka_kind_default() -> str:
    """``--kafka`` when not given: ``KAFKA_S3_DEV_KAFKA``, else the broker the services run, else Apache Kafka (the
    issue measures on it; noida is reported beside it)."""
    return os.environ.get("KAFKA_S3_DEV_KAFKA") or running_kafka_kind() or "apache"


def services_up(kafka_kind: str, work: Path, own_kafka: bool = False, own_port: int | None = None) -> Services:
    """Kafka and S3 for a run, never stopping or swapping what the shared services run (other sessions use them):

    - external Kafka / S3 named by env vars are used as they are;
    - ``own_kafka``, or a shared broker of another kind than ``kafka_kind``: a broker of the bench's own (Apache Kafka
      on port 21292 or noida-db on 21192, state in ``work``, stopped by ``stop_own_kafka``);
    - else the shared broker, started (``tools.services``) only when no broker runs at all;
    - S3: the shared SeaweedFS, started only when it does not run."""
    from tools import services as dev

    os.environ.setdefault("KAFKA_S3_SERVICES_DIR", str(ROOT / ".services"))
    if kafka_kind not in KAFKA_LABELS:
        raise SystemExit(f"--kafka {kafka_kind}: must be one of {', '.join(KAFKA_LABELS)}")
    external_kafka = bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    external_s3 = bool(os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("KAFKA_S3_EXTERNAL_S3"))
    if external_kafka:
        bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    else:
        running = running_kafka_kind()
        port = int(os.environ.get("KAFKA_S3_DEV_KAFKA_PORT", dev.DEFAULT_KAFKA_PORT))
        if own_kafka or (running and running != kafka_kind):
            bootstrap = start_own_kafka(kafka_kind, work, own_port)
        elif running:
            bootstrap = f"127.0.0.1:{port}"
        elif kafka_kind == "apache":
            bootstrap = dev.start_apache_kafka(port, home=dev.kafka_home())
        else:
            bootstrap = dev.start_kafka(port)
    s3 = s3_settings()
    return Services(bootstrap, *s3, external_kafka, external_s3, kafka_kind)


def s3_settings() -> tuple[str | None, str | None, str | None, str]:
    """(endpoint, access key, secret key, region): the external S3 named by env vars, else the shared SeaweedFS
    (started only when it does not run)."""
    from tools import services as dev

    os.environ.setdefault("KAFKA_S3_SERVICES_DIR", str(ROOT / ".services"))
    if os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("KAFKA_S3_EXTERNAL_S3"):
        return (
            os.environ.get("AWS_ENDPOINT_URL_S3"),
            os.environ.get("AWS_ACCESS_KEY_ID"),
            os.environ.get("AWS_SECRET_ACCESS_KEY"),
            os.environ.get("AWS_REGION", dev.REGION),
        )
    endpoint = dev.start_s3(int(os.environ.get("KAFKA_S3_DEV_S3_PORT", dev.DEFAULT_S3_PORT)))  # idempotent
    return endpoint, dev.ACCESS_KEY, dev.SECRET_KEY, dev.REGION


def start_own_kafka(kind: str, work: Path, port: int | None = None) -> str:
    """A broker of the bench's own on ``port`` (default ``OWN_PORTS[kind]``), state under ``work``."""
    from tools import services as dev

    if kind == "apache":
        reason = dev.apache_unavailable()
        if reason:
            raise SystemExit(f"--kafka apache: {reason}")
        port = port or OWN_PORTS["apache"]
        return dev.start_apache_kafka(port, directory=work / "apache-kafka", home=dev.kafka_home())
    return start_own_noida(work, port or OWN_PORTS["noida"])


def stop_own_kafka(work: Path) -> None:
    from tools import services as dev

    if (work / "apache-kafka" / "pid").exists():
        dev.stop_apache_kafka(work / "apache-kafka")
    stop_own_noida(work)


def start_own_noida(work: Path, port: int) -> str:
    from tools.kafka_broker import kafka_healthy

    noida = ROOT / ".venv" / "bin" / "noida-db"
    data = work / "noida"
    data.mkdir(parents=True, exist_ok=True)
    command = [str(noida), "up", "--data-dir", str(data), "--host", "127.0.0.1", "--only", "kafka"]
    result = subprocess.run([*command, "--kafka-port", str(port)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"noida-db did not start on port {port}:\n{result.stdout}\n{result.stderr}")
    bootstrap = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if kafka_healthy(bootstrap):
                return bootstrap
        time.sleep(0.5)
    raise SystemExit(f"noida-db on port {port} did not become healthy; see {data}/noida.log")


def stop_own_noida(work: Path) -> None:
    data = work / "noida"
    if data.exists():
        noida = ROOT / ".venv" / "bin" / "noida-db"
        subprocess.run([str(noida), "down", "--data-dir", str(data)], capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------------- Kafka
def admin(services: Services):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": services.bootstrap, "log_level": 4})


def create_topic(services: Services, name: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(services)  # keep a reference: the futures fail if the client is destroyed first
    futures = client.create_topics(
        [NewTopic(name, partitions, replication_factor=-1, config={"retention.ms": "-1"})], operation_timeout=30
    )
    futures[name].result(60)


def delete_topics(services: Services, names) -> None:
    names = [n for n in names if n]
    if not names:
        return
    client = admin(services)
    futures = client.delete_topics(names, operation_timeout=30)
    for name, future in futures.items():
        try:
            future.result(60)
        except Exception as exc:  # cleanup is best effort
            print(f"  (could not delete topic {name}: {exc})")


def end_offsets(services: Services, topic: str, partitions: int) -> dict[int, int]:
    """High watermarks per partition."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.bootstrap, "group.id": "kafka-s3-bench-watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def group_committed(services: Services, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": services.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()


# ---------------------------------------------------------------------------------------------------- S3
def s3_client(services: Services):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=services.s3_endpoint,
        aws_access_key_id=services.access_key,
        aws_secret_access_key=services.secret_key,
        region_name=services.region,
        config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=16),
    )


def create_bucket(services: Services, bucket: str) -> None:
    s3_client(services).create_bucket(Bucket=bucket)


def remove_bucket(services: Services, bucket: str) -> None:
    """Empty and delete a bucket (SeaweedFS gives every bucket volumes of its own: do not leave them behind)."""
    client = s3_client(services)
    try:
        for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            for i in range(0, len(keys), 1000):
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys[i : i + 1000], "Quiet": True})
        client.delete_bucket(Bucket=bucket)
    except Exception as exc:  # cleanup is best effort
        print(f"  (could not remove bucket {bucket}: {exc})")


def bucket_usage(services: Services, bucket: str) -> tuple[int, int]:
    """(objects, bytes) in a bucket."""
    client = s3_client(services)
    objects = size = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            objects += 1
            size += item["Size"]
    return objects, size


# ---------------------------------------------------------------------------------------------------- memory
def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgrp, comm) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), comm


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    """Proportional set size (shared pages split between their users): the sum over processes does not double count
    what forked Python workers share."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def process_tree(root: int) -> dict[int, tuple[int, str]]:
    """``root`` and every descendant (by parent links), plus anything left in its process group: pid -> (ppid, comm)."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            info = _stat(int(entry.name))
            if info:
                table[int(entry.name)] = info
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, str]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in table and pid not in found:
            found[pid] = (table[pid][0], table[pid][2])
            stack.extend(children.get(pid, []))
    for pid, (ppid, pgrp, comm) in table.items():
        if pgrp == root:
            found.setdefault(pid, (ppid, comm))
    return found


def process_kind(pid: int, root: int, tree: dict[int, tuple[int, str]]) -> str:
    """What a process of a kafka-s3 command's tree is: the driver (the command itself), the Spark JVM, Spark's Python
    daemon (a Python child of the JVM: it forks the workers), a Python worker (a child of the daemon; Python data
    source helpers the JVM starts directly are counted with the daemon), or its command name."""
    ppid, comm = tree[pid]
    if pid == root:
        return "driver"
    if comm == "java":
        return "jvm"
    if comm.startswith("python"):
        parent = tree.get(ppid, (0, ""))[1]
        return "python workers" if parent.startswith("python") and ppid != root else "python daemon"
    return comm


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process tree every ``interval`` seconds; keeps the peak and its breakdown."""

    def __init__(self, root: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak = 0
        self.peak_pss = 0
        self.peak_breakdown: dict[str, int] = {}
        self.peak_processes = 0
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def sample(self) -> None:
        tree = process_tree(self.root)
        sizes = {pid: _rss(pid) for pid in tree}
        total = sum(sizes.values())
        self.peak_pss = max(self.peak_pss, sum(_pss(pid) for pid in tree))
        self.samples += 1
        if total > self.peak:
            self.peak, self.peak_processes = total, len(tree)
            breakdown: dict[str, int] = {}
            for pid, size in sizes.items():
                if size:
                    kind = process_kind(pid, self.root, tree)
                    breakdown[kind] = breakdown.get(kind, 0) + size
            self.peak_breakdown = breakdown

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


# ---------------------------------------------------------------------------------------------------- subprocesses
@dataclass
class ProcessRun:
    command: list[str]
    returncode: int | None
    wall: float
    peak_rss: int
    peak_pss: int
    peak_breakdown: dict[str, int]
    peak_processes: int
    log: Path
    timed_out: bool = False
    stdout: str = ""
    extra: dict = field(default_factory=dict)

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def run_measured(
    command: list[str],
    env: dict[str, str],
    log: Path,
    timeout: float,
    cwd: Path | None = None,
    capture_stdout: bool = False,
) -> ProcessRun:
    """Run ``command`` in its own process group (stderr, and stdout unless captured, to ``log``), sampling the peak
    summed RSS of its whole process tree. On timeout the whole group is killed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as err:
        err.write(f"=== {' '.join(command)}\n".encode())
        err.flush()
        started = time.monotonic()
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd or ROOT,
            stdout=subprocess.PIPE if capture_stdout else err,
            stderr=err,
            start_new_session=True,
        )
        sampler = TreeSampler(proc.pid)
        sampler.start()
        timed_out = False
        stdout = ""
        try:
            if capture_stdout:
                out, _ = proc.communicate(timeout=timeout)
                stdout = out.decode(errors="replace")
            else:
                proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid)
            proc.wait()
        except BaseException:  # Ctrl-C of the harness: its own-session child would not get the signal
            kill_group(proc.pid)
            sampler.stop()
            raise
        wall = time.monotonic() - started
        sampler.stop()
        if _group_alive(proc.pid):  # leftovers (an orphaned JVM) must not skew the next run
            kill_group(proc.pid)
    return ProcessRun(
        command,
        proc.returncode,
        wall,
        sampler.peak,
        sampler.peak_pss,
        sampler.peak_breakdown,
        sampler.peak_processes,
        log,
        timed_out,
        stdout,
    )


def _group_alive(pgid: int) -> bool:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            info = _stat(int(entry.name))
            if info and info[1] == pgid:
                return True
    return False


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group of a subprocess this harness started (``start_new_session``: pgid == its pid)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def fmt_bytes(n: float) -> str:
    return f"{n / MiB:,.0f} MiB"
