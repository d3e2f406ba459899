"""The runtime of a randomized fault schedule (``chaos_schedule``): real services, kafka-s3 CLI processes, faults,
and the invariants checked at the end.

One schedule, in order:

1. a Kafka broker of its own on a free port (noida-db or Apache Kafka, as the suite's; the external cluster of
   ``KAFKA_BOOTSTRAP_SERVERS`` when there is one, then without broker restarts), buckets of its own on the S3 server,
   and a fault proxy (``tests/support/faultproxy.py``) in front of that server: every kafka-s3 process reaches S3
   through the proxy (``store.url``), the harness's own reads go straight to the server;
2. the source topics and a quarter of the records, then ``backup --follow`` and ``restore --follow`` of one
   configuration (``store.envelope=true``, ``topic.rename``), each a CLI subprocess in a process group of its own;
3. once both followers run (t=0), the producers (plain and transactional, some aborted) and the steps, each at its
   time: signals to process groups and restarts, proxy faults, second runs, a broker restart, the re-created topic;
   a primary follower that ends on its own is started again (as a service manager would), and its exit judged;
4. the end: producers and faults stopped, second runs stopped, the backup follower stopped and a ``backup --once``
   run; the restore follower left to catch up (or, when it does not, stopped and a one-shot ``restore`` run);
5. the invariants, each violation naming topic, partition, offsets and the seed: for every source partition the
   target holds the source's committed records (read_committed) in order, with keys, headers and timestamps, no
   duplicate, no gap, nothing else; every process's exit code is one of the documented ones for what happened; every
   refusal is loud (a non-zero exit and a ``kafka-s3: error:`` line); the re-created topic is refused by its backup
   and its restored target is what the old incarnation held, up to what was backed up.

The contract for refusals being built (issue 26): a second restore of one target exits 6 naming the other run; a
one-shot restore that meets a chunk still uploading exits 8 ("stopped at an unfinished chunk; run again"); a backup
whose source topic was deleted and re-created exits non-zero naming topic, partition and offset.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

from tests.chaos.chaos_schedule import Schedule, Step
from tests.support.faultproxy import DEFAULT_CODES, FaultProxy, Rule
from tests.support.integration import free_port_pair

SIGTERM_GRACE = 120.0  # seconds a process may take to stop after SIGTERM before it is reported and killed
ONE_SHOT_LIMIT = 420.0  # seconds a final one-shot run may take before it is reported as hanging and killed
CATCH_UP = 60.0  # seconds the restore follower may go without restoring a record before it caught up
READY_LIMIT = 180.0  # seconds both followers get to start
LEASE_MEMORY = 300.0  # a restore refused as "another restore holds the target" up to this long after another ran
# the harness's own Kafka clients log only what is critical: a broker restart would print a connection error
# every second (the clients' errors reach the harness through exceptions and delivery reports anyway)
QUIET = {"log_level": 2}


# ------------------------------------------------------------------------------------------------------ records
class Rec(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp: int

    @property
    def rid(self) -> str | None:
        """The record's identity: the ``id`` header the producer set, else the prefix of its value."""
        for name, value in self.headers:
            if name == "id" and value is not None:
                return value.decode(errors="replace")
        if self.value and b"|" in self.value:
            return self.value.split(b"|", 1)[0].decode(errors="replace")
        return None

    def fields(self) -> tuple:
        return (self.key, self.value, self.headers, self.timestamp)


def committed_ends(
    bootstrap: str, topic: str, partitions: int, stable_for: float = 10.0, say: Callable[[str], None] | None = None
) -> dict[int, int]:
    """Last stable offsets (read_committed), once they reach the high watermarks or after ``stable_for`` seconds
    (Apache Kafka writes a committed transaction's markers a moment after the commit returns)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})

    def ends(level) -> dict[int, int]:
        specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
        futures = admin.list_offsets(specs, isolation_level=level, request_timeout=30)
        return {tp.partition: f.result().offset for tp, f in futures.items()}

    deadline = time.monotonic() + stable_for
    while True:
        stable, high = ends(IsolationLevel.READ_COMMITTED), ends(IsolationLevel.READ_UNCOMMITTED)
        if stable == high:
            return stable
        if time.monotonic() > deadline:
            if say is not None:
                say(f"{topic}: last stable offsets {stable} below the high watermarks {high}: a transaction is open")
            return stable
        time.sleep(0.2)


def read_topic(
    bootstrap: str, topic: str, partitions: int, stable_for: float = 10.0, say: Callable[[str], None] | None = None
) -> dict[int, list[Rec]]:
    """Every committed record of ``topic`` (read_committed), per partition, in offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    ends = committed_ends(bootstrap, topic, partitions, stable_for, say)
    out: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    todo = {p for p in range(partitions) if ends[p] > 0}
    if not todo:
        return out
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            **QUIET,
            "group.id": f"chaos-check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "receive.message.max.bytes": 200_000_000,  # noida-db ignores fetch limits
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
        deadline = time.monotonic() + 60
        while todo:
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {topic} partitions {sorted(todo)} up to {ends} did not end in 60 s")
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                p = message.partition()
                headers = tuple((k, v) for k, v in (message.headers() or []))
                out[p].append(Rec(message.offset(), message.key(), message.value(), headers, message.timestamp()[1]))
            for position in consumer.position([TopicPartition(topic, p) for p in sorted(todo)]):
                if position.offset >= ends[position.partition]:
                    todo.discard(position.partition)
    finally:
        consumer.close()
    return out


# ----------------------------------------------------------------------------------------------------- workload
class Workload(threading.Thread):
    """Produces the schedule's records into the source topics: single records through an idempotent producer and
    batches through a transactional one, some of whose transactions are aborted; keys (some null), repeated header
    keys, an ``id`` header, explicit timestamps out of order, a few tombstones."""

    def __init__(
        self,
        bootstrap: str,
        topics: dict[str, int],
        schedule: Schedule,
        say: Callable[[str], None],
    ):
        super().__init__(name="chaos-producer", daemon=True)
        self.bootstrap = bootstrap
        self.topics = topics
        self.rng = random.Random(schedule.seed * 7919 + 1)
        self.say = say
        self.total = schedule.records
        self.window = schedule.duration * 0.85
        # share of transactional *units* so that about ``transactional`` of the records are in transactions
        # (a transaction holds 3–15 records, 9 on average; a plain unit 1–3, 2 on average)
        share = schedule.transactional
        self.unit_transactional = 2 * share / (9 - 7 * share)
        self.abort = schedule.abort
        self.base_ts = int(time.time() * 1000)
        self.produced = 0  # records handed to a producer (committed, aborted or failed)
        self.aborted: set[str] = set()
        self.transactions = {"committed": 0, "aborted": 0, "failed": 0}
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._counter = itertools.count()
        self._tx_id = f"chaos-{schedule.seed}-{uuid.uuid4().hex[:6]}"
        self.plain = self._producer({"enable.idempotence": True})
        self.txn = None

    def _producer(self, extra: dict):
        from confluent_kafka import Producer

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                **QUIET,
                "linger.ms": 5,
                "queue.buffering.max.messages": 100_000,
                "message.timeout.ms": 120_000,
                **extra,
            }
        )

    def _new_txn(self) -> None:
        from confluent_kafka import KafkaException

        while not self.stop.is_set():
            self.txn = self._producer(
                {"transactional.id": self._tx_id, "transaction.timeout.ms": 30_000, "message.timeout.ms": 30_000}
            )
            try:
                self.txn.init_transactions(30)
                return
            except KafkaException as exc:
                self.say(f"producer: init_transactions failed ({exc.args[0]}); again in 1s")
                time.sleep(1)

    def record(self) -> dict:
        rng = self.rng
        topic = rng.choice(sorted(self.topics))
        partition = rng.randrange(self.topics[topic])
        n = next(self._counter)
        rid = f"{topic}/{partition}/{n}"
        key = None if rng.random() < 0.1 else f"key-{rng.randrange(50)}".encode()
        tombstone = key is not None and rng.random() < 0.03
        value = None if tombstone else rid.encode() + b"|" + rng.randbytes(rng.randint(0, 48))
        headers = [("id", rid.encode())]
        headers += [("h", f"{i}-{n}".encode()) for i in range(rng.randint(0, 3))]
        if rng.random() < 0.2:
            headers.append(("empty", None))
        if rng.random() < 0.3:
            headers.append(("h", b"last"))
        return {
            "topic": topic,
            "partition": partition,
            "key": key,
            "value": value,
            "headers": headers,
            "timestamp": self.base_ts - rng.randint(0, 3_600_000),
            "rid": rid,
        }

    def _send(self, producer, r: dict) -> None:
        while True:
            try:
                producer.produce(
                    r["topic"],
                    value=r["value"],
                    key=r["key"],
                    partition=r["partition"],
                    headers=r["headers"],
                    timestamp=r["timestamp"],
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        self.produced += 1

    def prefill(self, count: int) -> None:
        """``count`` plain records now (before the followers start)."""
        for _ in range(count):
            self._send(self.plain, self.record())
        if self.plain.flush(60):
            raise RuntimeError("the prefill was not delivered within 60 s")

    def _transaction(self, records: list[dict]) -> None:
        from confluent_kafka import KafkaException

        if self.txn is None:
            self._new_txn()
        abort = self.rng.random() < self.abort
        started = time.monotonic()
        try:
            self.txn.begin_transaction()
            for r in records:
                self._send(self.txn, r)
            if abort:
                self.txn.abort_transaction(30)
                self.aborted.update(r["rid"] for r in records)
                self.transactions["aborted"] += 1
            else:
                self.txn.commit_transaction(30)
                self.transactions["committed"] += 1
            if time.monotonic() - started > 5:
                self.say(f"producer: a transaction took {time.monotonic() - started:.1f}s")
        except KafkaException as exc:
            error = exc.args[0]
            self.transactions["failed"] += 1
            self.say(f"producer: transaction of {len(records)} records failed ({error}): outcome left to the broker")
            try:
                if error.fatal():
                    raise exc
                self.txn.abort_transaction(30)
            except KafkaException:
                self.txn = None  # a new producer fences the old one's transaction
            time.sleep(0.5)

    def run(self) -> None:
        try:
            started = time.monotonic()
            remaining = self.total - self.produced
            done = 0
            while done < remaining and not self.stop.is_set():
                if self.rng.random() < self.unit_transactional:
                    records = [self.record() for _ in range(min(self.rng.randint(3, 15), remaining - done))]
                    self._transaction(records)
                else:
                    records = [self.record() for _ in range(min(self.rng.randint(1, 3), remaining - done))]
                    for r in records:
                        self._send(self.plain, r)
                done += len(records)
                due = started + self.window * done / remaining
                self.stop.wait(max(0.0, due - time.monotonic()))
            left = self.plain.flush(120)
            self.say(f"producer: done ({done} records){f', {left} not delivered after 120 s' if left else ''}")
        except BaseException as exc:  # surfaced by the harness
            self.error = exc
            self.say(f"producer: stopped by {type(exc).__name__}: {exc}")

    def close(self) -> None:
        self.stop.set()
        started = time.monotonic()
        if self.ident is not None:
            self.join(180)
        if time.monotonic() - started > 5:
            self.say(f"producer: took {time.monotonic() - started:.1f}s to stop")
        if self.plain is None:
            return
        left = self.plain.flush(60)
        if left:
            self.say(f"producer: {left} plain records still undelivered after 60 s (left out of the source)")
        if self.txn is not None:
            with contextlib.suppress(Exception):
                self.txn.flush(30)
        self.txn = self.plain = None  # librdkafka clients gone before the broker stops (else they log reconnects)


# --------------------------------------------------------------------------------------------------------- broker
class Broker:
    """The schedule's Kafka: a broker of its own (``noida`` or ``apache``) on a free port, restartable keeping its
    data, or an ``external`` cluster (never restarted)."""

    def __init__(self, kind: str, directory: Path, external: str | None = None):
        self.kind = kind
        self.directory = directory
        self.bootstrap = external or ""
        self.port = 0

    @property
    def controlled(self) -> bool:
        return self.kind != "external"

    def start(self) -> str:
        from tools import kafka_broker

        if self.kind == "external":
            return self.bootstrap
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port_pair()
        self.bootstrap = f"127.0.0.1:{self.port}"
        if self.kind == "apache":
            kafka_broker.start_apache_kafka(self.port, directory=self.directory, home=kafka_broker.kafka_home())
        else:
            self._noida("up", "--host", "127.0.0.1", "--only", "kafka", "--kafka-port", str(self.port))
            self._wait_healthy()
        return self.bootstrap

    def _noida(self, *args: str) -> None:
        from tools.processes import _bin

        result = subprocess.run(
            [_bin("noida-db"), args[0], "--data-dir", str(self.directory), *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise RuntimeError(f"noida-db {' '.join(args)} failed: {result.stdout}{result.stderr}")

    def _noida_pid(self) -> int | None:
        try:
            return int(json.loads((self.directory / "noida.control.json").read_text())["pid"])
        except (OSError, ValueError, KeyError):
            return None

    def _wait_healthy(self, limit: float = 90) -> None:
        from tools import kafka_broker

        deadline = time.monotonic() + limit
        while True:
            with contextlib.suppress(Exception):
                if kafka_broker.kafka_healthy(self.bootstrap):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the broker at {self.bootstrap} did not answer within {limit:.0f}s")
            time.sleep(0.3)

    def stop(self) -> None:
        from tools import kafka_broker
        from tools.processes import _alive

        if self.kind == "apache":
            kafka_broker.stop_apache_kafka(self.directory)
        elif self.kind == "noida":
            pid = self._noida_pid()
            self._noida("down")
            deadline = time.monotonic() + 60
            while pid and _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)

    def restart(self, down: float) -> None:
        """Graceful stop, ``down`` seconds, start again on the same port with the same data."""
        if not self.controlled:
            raise RuntimeError("an external broker is never restarted")
        self.stop()
        time.sleep(down)
        if self.kind == "apache":
            self._start_apache_again()
        else:
            self._noida("up", "--host", "127.0.0.1", "--only", "kafka", "--kafka-port", str(self.port))
        self._wait_healthy()

    def _start_apache_again(self) -> None:
        from tools import kafka_broker

        directory = self.directory
        log = directory / "server.log"
        before = log.read_text(errors="replace").count("Kafka Server started")
        env = {**os.environ, "LOG_DIR": str(directory / "logs")}
        env.setdefault("KAFKA_HEAP_OPTS", "-Xmx1G -Xms256m")
        for name in ("JMX_PORT", "KAFKA_JMX_OPTS"):
            env.pop(name, None)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [
                    str(kafka_broker.kafka_home() / "bin" / "kafka-server-start.sh"),
                    str(directory / "server.properties"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        (directory / "pid").write_text(str(proc.pid))
        deadline = time.monotonic() + 90
        while log.read_text(errors="replace").count("Kafka Server started") <= before:
            if proc.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited while restarting (code {proc.returncode}); see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Apache Kafka did not restart within 90 s; see {log}")
            time.sleep(0.3)


# ----------------------------------------------------------------------------------------------------- S3 proxy
@dataclass
class Window:
    until: float  # time.monotonic()
    requests: str  # PUT, GET, LIST or ANY
    action: str  # delay or status
    probability: float
    seconds: tuple[float, float] = (0.0, 0.0)
    status: int = 503


@dataclass
class Stall:
    pattern: re.Pattern
    nth: int
    seconds: float
    seen: list[str] = field(default_factory=list)  # the partition's data objects, in the order first PUT
    held: tuple[float, str] | None = None  # when, and which object's PUT was held


def request_kind(method: str, path: str, query: str) -> str:
    if method == "GET" and ("list-type" in query or path.rstrip("/").count("/") <= 1):
        return "LIST"
    if method in ("GET", "HEAD"):
        return "GET"
    if method in ("PUT", "POST"):
        return "PUT"
    return method


class ChaosProxy(FaultProxy):
    """The fault proxy with time windows of random faults: for each request of a window's kind, with its
    probability, a delay or a 5xx answer (the scripted rules of ``FaultProxy`` come first)."""

    def __init__(self, upstream: str, seed: int):
        super().__init__(upstream)
        self._random = random.Random(seed * 31 + 7)
        self._windows: list[Window] = []
        self.injected: dict[str, int] = {}
        self.scripted: list[tuple[float, str, str, str]] = []  # (time.monotonic(), method, path, action) applied
        self._stalls: list[Stall] = []

    def stall(self, topic: str, partition: int, nth: int, seconds: float) -> Stall:
        """Hold the first PUT of the ``nth`` (from 0) distinct data object of ``topic``'s ``partition`` for
        ``seconds``: a chunk whose upload hangs while the backup goes on with the others."""
        stall = Stall(re.compile(rf"/partition={partition}/{re.escape(topic)}\+{partition}\+\d+\."), nth, seconds)
        with self._lock:
            self._stalls.append(stall)
        return stall

    def add_window(self, window: Window) -> None:
        with self._lock:
            self._windows.append(window)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._windows.clear()

    def _take_rule(self, method: str, path: str, query: str) -> Rule | None:
        path = unquote(path)  # botocore sends keys URL-encoded ('+' as %2B, '=' as %3D): rules match the key
        rule = super()._take_rule(method, path, query)
        if rule is not None:
            with self._lock:
                self.injected[f"scripted {rule.action}"] = self.injected.get(f"scripted {rule.action}", 0) + 1
                self.scripted.append((time.monotonic(), method, path, rule.action))
            return rule
        kind = request_kind(method, path, query)
        now = time.monotonic()
        with self._lock:
            for stall in self._stalls:
                if method != "PUT" or not stall.pattern.search(path) or stall.held is not None:
                    continue
                key = path.split("?")[0]
                if key not in stall.seen:
                    stall.seen.append(key)
                if stall.seen.index(key) == stall.nth:
                    stall.held = (now, path)
                    self.scripted.append((now, method, path, "stall"))
                    self.injected["PUT stall"] = self.injected.get("PUT stall", 0) + 1
                    return Rule("delay", 1, seconds=stall.seconds)
            for window in self._windows:
                if window.until < now or window.requests not in ("ANY", kind):
                    continue
                if self._random.random() >= window.probability:
                    continue
                name = f"{kind} {window.action if window.action == 'delay' else window.status}"
                self.injected[name] = self.injected.get(name, 0) + 1
                if window.action == "delay":
                    return Rule("delay", 1, seconds=self._random.uniform(*window.seconds))
                return Rule("status", 1, status=window.status, code=DEFAULT_CODES.get(window.status, "Error"))
        return None


# ---------------------------------------------------------------------------------------------------- processes
@dataclass
class Signal:
    at: float
    name: str  # SIGKILL or SIGTERM
    group: bool


@dataclass
class CliProcess:
    """One kafka-s3 CLI process, in a process group of its own (its Spark JVM and Python workers included)."""

    role: str  # backup, restore, backup2, restore2, backup-r, final-backup, final-restore, restore-r
    number: int
    args: list[str]
    log: Path
    popen: subprocess.Popen
    started: float
    one_shot: bool
    ended: float | None = None
    returncode: int | None = None
    signals: list[Signal] = field(default_factory=list)
    leftovers: int = 0  # processes of its group still alive 20 s after it ended (killed then)
    notes: list[str] = field(default_factory=list)
    bucket_empty: bool = False  # a one-shot restore that exited 2: the bucket held no data object as it ended

    @property
    def name(self) -> str:
        return f"{self.role}#{self.number}"

    @property
    def running(self) -> bool:
        return self.ended is None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def error_lines(self) -> list[str]:
        """Each ``kafka-s3: error:`` line, with the indented lines that follow it (the problems it lists)."""
        out: list[str] = []
        lines = self.output().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("kafka-s3: error:"):
                details = list(itertools.takewhile(lambda x: x[:1].isspace(), lines[i + 1 : i + 4]))
                out.append(" / ".join([line.rstrip(":"), *(d.strip() for d in details)]))
        return out

    def describe_end(self) -> str:
        how = ", ".join(f"{s.name}{'' if s.group else ' (driver only)'} at {s.at:.1f}s" for s in self.signals)
        errors = self.error_lines()
        tail = f": {errors[-1][:600]}" if errors else ""
        return f"{self.name} exit {self.returncode}" + (f" after {how}" if how else " on its own") + tail


# --------------------------------------------------------------------------------------------------------- world
@dataclass(order=True)
class Action:
    at: float
    seq: int
    name: str = field(compare=False)
    run: Callable[[], bool | None] = field(compare=False)  # returns True to be tried again a second later


class ScheduleRun:
    """Runs one schedule end to end; ``violations`` lists what broke (empty: the schedule passed)."""

    def __init__(self, schedule: Schedule, workdir: Path, services, s3_client, broker_kind: str):
        self.schedule = schedule
        self.seed = schedule.seed
        self.workdir = workdir
        self.s3 = s3_client
        self.services = services
        external = None if broker_kind != "external" else services.kafka_bootstrap
        self.broker = Broker(broker_kind, workdir / "broker", external)
        self.id = f"chaos-{self.seed}-{uuid.uuid4().hex[:4]}"
        self.topics = {f"{self.id}-{suffix}": n for suffix, n in schedule.topics.items()}
        self.targets = {t: f"{t}-restored" for t in self.topics}
        self.recreate_topic = f"{self.id}-recreated" if schedule.recreate else None
        self.bucket = f"{self.id}-m".lower()
        self.recreate_bucket = f"{self.id}-r".lower()
        self.processes: list[CliProcess] = []
        self.violations: list[str] = []
        self.notes: list[str] = []
        self.broker_restarts: list[tuple[float, float]] = []
        self.s3_fault_windows: list[tuple[float, float]] = []
        self.stalls: list[Stall] = []
        self.recreated_at: float | None = None
        self.old_incarnation: dict[int, list[Rec]] = {}
        self.new_incarnation: dict[int, list[Rec]] = {}
        self.old_stored: dict[int, int] = {}  # data objects of the old incarnation in the bucket, per partition
        self.new_incarnation_ids: set[str] = set()
        self._actions: list[Action] = []
        self._seq = itertools.count()
        self._numbers = itertools.count(1)
        self._restarts: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._timeline = open(workdir / "schedule.log", "a", buffering=1)  # noqa: SIM115 (closed in close())
        self.proxy: ChaosProxy | None = None
        self.workload: Workload | None = None
        self.env = self._cli_env()

    # ------------------------------------------------------------------------------------------------ plumbing
    def now(self) -> float:
        return time.monotonic() - self._t0

    def say(self, message: str) -> None:
        line = f"[{self.now():7.1f}s] {message}"
        with self._lock:
            self._timeline.write(line + "\n")
        print(line, flush=True)

    def violation(self, message: str) -> None:
        text = f"seed {self.seed}: {message}"
        self.violations.append(text)
        self.say("VIOLATION " + text)

    def _cli_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        for name in ("SPARK_REMOTE", "KAFKA_S3_SPARK_MASTER", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
            env.pop(name, None)
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
        env["KAFKA_S3_SPARK_SERVER"] = "0"  # each command's Spark in its own process group: a kill takes it all
        env["PYSPARK_PYTHON"] = sys.executable
        if self.services.access_key:
            env["AWS_ACCESS_KEY_ID"] = self.services.access_key
            env["AWS_SECRET_ACCESS_KEY"] = self.services.secret_key
        env["AWS_REGION"] = self.services.region
        return env

    def at(self, when: float, name: str, run: Callable[[], bool | None]) -> None:
        heapq.heappush(self._actions, Action(when, next(self._seq), name, run))

    def in_thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        def guarded() -> None:
            try:
                target()
            except BaseException as exc:  # a harness failure: reported, the schedule is not trusted
                self.violation(f"harness step {name} failed: {type(exc).__name__}: {exc}")

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    # -------------------------------------------------------------------------------------------------- config
    def write_configs(self) -> None:
        s = self.schedule
        common = {
            "connector.class": "io.confluent.connect.s3.S3SinkConnector",
            "flush.size": str(s.flush_size),
            "store.url": self.proxy.url,
            "s3.region": self.services.region,
            "bootstrap.servers": self.broker.bootstrap,
            "format.class": s.format,
            "store.envelope": "true",
            "topic.creation.enable": "true",
            "topic.creation.default.retention.ms": "-1",
            "exactly.once.support": "required",
            "cycle.interval.ms": str(s.cycle_interval_ms),
            "s3.poll.interval.ms": str(s.poll_interval_ms),
            "restore.transaction.records": str(s.transaction_records),
            "max.records.per.partition.per.cycle": "400",
            # a map topic of its own: a restore killed inside a transaction holds the map's partition until Kafka
            # aborts it, which other restores on a shared cluster would wait for
            "restore.offset.map.topic": f"{self.id}-offset-map",
        }
        main = {
            "name": self.id,
            "topics": ",".join(self.topics),
            "s3.bucket.name": self.bucket,
            "topic.rename": ",".join(f"{t}:{self.targets[t]}" for t in self.topics),
            **common,
        }
        self.config = self.workdir / "chaos.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in main.items()))
        if self.recreate_topic:
            recreate = {
                "name": f"{self.id}-r",
                "topics": self.recreate_topic,
                "s3.bucket.name": self.recreate_bucket,
                "topic.rename": f"{self.recreate_topic}:{self.recreate_topic}-restored",
                **common,
            }
            self.recreate_config = self.workdir / "recreate.properties"
            self.recreate_config.write_text("".join(f"{k}={v}\n" for k, v in recreate.items()))

    # ----------------------------------------------------------------------------------------------- processes
    def start(self, role: str, args: list[str], one_shot: bool) -> CliProcess:
        number = next(self._numbers)
        log = self.workdir / f"{number:02d}-{role}.log"
        with open(log, "ab") as out:
            out.write(f"=== kafka-s3 {' '.join(args)} ===\n".encode())
            out.flush()
            popen = subprocess.Popen(
                [sys.executable, "-m", "kafka_s3.cli", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.workdir,
                start_new_session=True,
            )
        proc = CliProcess(role, number, args, log, popen, self.now(), one_shot)
        self.processes.append(proc)
        self.say(f"started {proc.name} (pid {proc.pid}): kafka-s3 {' '.join(args)}")
        return proc

    def start_role(self, role: str) -> CliProcess:
        config = str(self.config)
        if role == "backup":
            return self.start(role, ["backup", "--follow", "-c", config], one_shot=False)
        if role == "restore":
            return self.start(role, ["restore", "--follow", "--no-progress", "-c", config], one_shot=False)
        raise ValueError(role)

    def running(self, role: str | None = None) -> list[CliProcess]:
        return [p for p in self.processes if p.running and (role is None or p.role == role)]

    def supervise(self) -> None:
        """Note processes that ended; start a primary follower again when it ended on its own."""
        for proc in self.running():
            code = proc.popen.poll()
            if code is None:
                continue
            proc.ended, proc.returncode = self.now(), code
            self.say(f"ended: {proc.describe_end()}")
            if code == 2 and proc.one_shot and proc.role.startswith("restore"):
                # "nothing to restore" is right while the bucket holds no data object yet (backups killed or slow)
                bucket, topics = (
                    (self.recreate_bucket, [self.recreate_topic])
                    if proc.role == "restore-r"
                    else (self.bucket, self.topics)
                )
                proc.bucket_empty = not any(self._keys(bucket, f"topics/{topic}/") for topic in topics)
                self.say(f"{proc.name}: the bucket held {'no' if proc.bucket_empty else 'some'} data objects then")
            self._reap(proc)
            if proc.role in ("backup", "restore") and not proc.signals and self.phase == "faults":
                count = self._restarts[proc.role] = self._restarts.get(proc.role, 0) + 1
                if count <= 6:
                    self.say(f"{proc.role} ended on its own: started again in 5s (as a service manager would)")
                    self.at(self.now() + 5, f"restart {proc.role}", lambda role=proc.role: self.ensure(role))

    def _reap(self, proc: CliProcess, grace: float = 20.0) -> None:
        """The driver ended: its group (Spark JVM, Python workers) should follow; leftovers are killed after
        ``grace`` seconds and counted."""

        def reap() -> None:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.5)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.leftovers = 1
                self.say(f"{proc.name}: its process group was still alive {grace:.0f}s after it ended: killed")

        self.in_thread(f"reap {proc.name}", reap)

    def ensure(self, role: str) -> bool | None:
        """Start ``role`` unless an instance runs; wait (try again) while one is still stopping."""
        if self.running(role):
            return None
        self.start_role(role)
        return None

    def send(self, proc: CliProcess, name: str, group: bool) -> bool:
        if proc.popen.poll() is not None:
            self.say(f"{name} for {proc.name}: it had already ended")
            return False
        sig = signal.SIGKILL if name == "SIGKILL" else signal.SIGTERM
        proc.signals.append(Signal(self.now(), name, group))
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)
        except ProcessLookupError:
            return False
        self.say(f"{name} -> {proc.name} ({'process group' if group else 'driver only'})")
        if name == "SIGTERM":
            self.at(self.now() + SIGTERM_GRACE, f"stopped? {proc.name}", lambda: self._stopped_or_kill(proc))
        return True

    def _stopped_or_kill(self, proc: CliProcess) -> None:
        if proc.popen.poll() is None:
            self.violation(
                f"{proc.name} did not stop within {SIGTERM_GRACE:.0f}s of SIGTERM (killed); last lines: "
                + " | ".join(proc.output().splitlines()[-3:])[:600]
            )
            proc.notes.append("did not stop after SIGTERM")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    def stop(self, proc: CliProcess, limit: float = SIGTERM_GRACE) -> None:
        """SIGTERM to the group, wait until it ends (SIGKILL and a violation after ``limit``)."""
        if not self.send(proc, "SIGTERM", group=True):
            self.supervise()
            return
        try:
            proc.popen.wait(limit)
        except subprocess.TimeoutExpired:
            self._stopped_or_kill(proc)
            proc.popen.wait(30)
        self.supervise()

    def wait(self, proc: CliProcess, limit: float = ONE_SHOT_LIMIT) -> None:
        try:
            proc.popen.wait(limit)
        except subprocess.TimeoutExpired:
            self.violation(
                f"{proc.name} did not end within {limit:.0f}s (killed); last lines: "
                + " | ".join(proc.output().splitlines()[-3:])[:600]
            )
            proc.notes.append("hung")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.popen.wait(30)
        self.supervise()

    # ------------------------------------------------------------------------------------------------ steps
    def schedule_step(self, step: Step) -> None:
        handler = getattr(self, "step_" + step.kind.replace("-", "_"))
        after_stall = step.params.get("after_stall")
        if after_stall is None:
            self.at(step.at, step.describe(), lambda: handler(step))
            return

        def when_stalled() -> bool | None:  # a moment after a stall began, else at the step's own time
            held = [st.held[0] - self._t0 for st in self.stalls if st.held]
            if (held and self.now() >= held[0] + after_stall) or self.now() >= step.at:
                return handler(step)
            return True

        self.at(0.0, step.describe(), when_stalled)

    def _pick(self, step: Step) -> CliProcess | None:
        target = step.params["target"]
        candidates = sorted(
            (p for p in self.running() if p.role != "restore-r" and p.popen.poll() is None), key=lambda p: p.number
        )
        if target != "any":
            candidates = [p for p in candidates if p.role == target]
        if not candidates:
            return None
        return candidates[min(len(candidates) - 1, int(step.params.get("pick", 0.0) * len(candidates)))]

    def _signal_step(self, step: Step, name: str, group: bool) -> None:
        proc = self._pick(step)
        if proc is None:
            self.say(f"{step.kind}: no {step.params['target']} process running: nothing to signal")
            return
        if not self.send(proc, name, group):
            return
        if proc.role in ("backup", "restore"):
            delay = step.params["restart_after"]

            def restart(proc=proc) -> bool | None:
                if proc.popen.poll() is None:
                    return True  # still stopping
                self.supervise()
                return self.ensure(proc.role)

            self.at(self.now() + delay, f"restart {proc.role}", restart)

    def step_kill9(self, step: Step) -> None:
        self._signal_step(step, "SIGKILL", group=True)

    def step_sigterm(self, step: Step) -> None:
        self._signal_step(step, "SIGTERM", group=step.params["group"])

    def step_latency(self, step: Step) -> None:
        p = step.params
        self.proxy.add_window(
            Window(time.monotonic() + p["lasts"], p["requests"], "delay", p["probability"], seconds=p["seconds"])
        )

    def step_errors(self, step: Step) -> None:
        p = step.params
        self.proxy.add_window(
            Window(time.monotonic() + p["lasts"], p["requests"], "status", p["probability"], status=p["status"])
        )
        self.s3_fault_windows.append((self.now(), self.now() + p["lasts"]))

    def step_stall(self, step: Step) -> None:
        p = step.params
        self.stalls.append(self.proxy.stall(f"{self.id}-{p['topic']}", p["partition"], p["chunk"], p["seconds"]))

    def _second(self, step: Step, role: str, command: str) -> None:
        mode = step.params["mode"]
        args = {
            ("backup", "once"): ["backup", "--once", "--no-progress"],
            ("backup", "follow"): ["backup", "--follow"],
            ("restore", "once"): ["restore", "--no-progress"],
            ("restore", "follow"): ["restore", "--follow", "--no-progress"],
        }[(command, mode)]
        proc = self.start(role, [*args, "-c", str(self.config)], one_shot=mode == "once")
        stop_after = step.params.get("stop_after")
        if mode == "follow" and stop_after is not None:
            self.at(self.now() + stop_after, f"stop {proc.name}", lambda: self._stop_async(proc))

    def _stop_async(self, proc: CliProcess) -> None:
        if proc.popen.poll() is None:
            self.send(proc, "SIGTERM", group=True)

    def step_backup2(self, step: Step) -> None:
        self._second(step, "backup2", "backup")

    def step_restore2(self, step: Step) -> None:
        if not step.params.get("alone"):
            self._second(step, "restore2", "restore")
            return
        # a one-shot restore while the follower is stopped (an operator's run): the follower comes back after it
        for proc in self.running("restore"):
            self.send(proc, "SIGTERM", group=True)

        def run_alone() -> bool | None:
            if any(p.popen.poll() is None for p in self.running("restore")):
                return True  # the follower is still stopping
            self.supervise()
            proc = self.start("restore2", ["restore", "--no-progress", "-c", str(self.config)], one_shot=True)

            def follower_back() -> bool | None:
                if proc.popen.poll() is None:
                    return True
                self.supervise()
                return self.ensure("restore")

            self.at(self.now() + 1, f"restart restore after {proc.name}", follower_back)
            return None

        self.at(self.now(), "restore2 alone", run_alone)

    def step_broker_restart(self, step: Step) -> None:
        def restart() -> None:
            started = self.now()
            self.say(f"broker restart: stopping {self.broker.kind} at {self.broker.bootstrap}")
            self.broker.restart(step.params["down"])
            self.broker_restarts.append((started, self.now()))
            self.say(f"broker restart: up again after {self.now() - started:.1f}s")

        self.in_thread("broker-restart", restart)

    def step_recreate_backup(self, step: Step) -> bool | None:
        if step.params["incarnation"] == "new" and (self.recreated_at is None or self.recreated_at < 0):
            return True  # the re-creation has not happened (or ended) yet
        self.start("backup-r", ["backup", "--once", "--no-progress", "-c", str(self.recreate_config)], one_shot=True)
        return None

    def step_recreate(self, step: Step) -> bool | None:
        if self.running("backup-r"):
            return True  # the old incarnation's backup first
        self.recreated_at = -1.0  # in progress

        def recreate() -> None:
            from confluent_kafka.admin import AdminClient, NewTopic

            topic, r = self.recreate_topic, self.schedule.recreate
            admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, **QUIET})

            def delete() -> None:
                if topic in admin.list_topics(timeout=30).topics:
                    for future in admin.delete_topics([topic], operation_timeout=30).values():
                        future.result()

            def create() -> None:  # TOPIC_ALREADY_EXISTS while the deletion is still going on
                new = NewTopic(topic, r.partitions, 1, config={"retention.ms": "-1"})
                for future in admin.create_topics([new], operation_timeout=30).values():
                    future.result()

            # what the old incarnation's backups stored (none runs now): nothing, or data objects to protect
            for key in self._keys(self.recreate_bucket, f"topics/{topic}/"):
                match = re.search(r"/partition=(\d+)/", key)
                if match:
                    self.old_stored[int(match.group(1))] = self.old_stored.get(int(match.group(1)), 0) + 1
            # (a broker restart may be going on: each call is tried again for a while)
            retry(delete, f"delete {topic}")
            retry(create, f"re-create {topic}")
            self.new_incarnation_ids = retry(
                lambda: produce_incarnation(self.broker.bootstrap, topic, r.partitions, r.new_records, "new"),
                f"produce into the re-created {topic}",
            )
            self.new_incarnation = read_topic(self.broker.bootstrap, topic, r.partitions)
            self.recreated_at = self.now()
            self.say(f"recreate: {topic} deleted and re-created with {r.new_records} other records per partition")

        self.in_thread("recreate", recreate)
        return None

    # ------------------------------------------------------------------------------------------------ phases
    phase = "setup"

    def run(self) -> list[str]:
        s = self.schedule
        self.say(s.describe().replace("\n", "\n           "))
        self.code = _code_version()
        self.say(f"code under test: {self.code}")
        self.say(
            f"kafka: {self.broker.kind}; S3: {self.services.s3_endpoint} behind a fault proxy; workdir {self.workdir}"
        )
        self.broker.start()
        self.s3.create_bucket(Bucket=self.bucket)
        if self.recreate_topic:
            self.s3.create_bucket(Bucket=self.recreate_bucket)
        self.proxy = ChaosProxy(self.services.s3_endpoint, self.seed)
        self.proxy.__enter__()
        self.write_configs()
        self._create_topics()
        self.workload = Workload(self.broker.bootstrap, self.topics, s, self.say)
        self.workload.prefill(int(s.records * s.prefill))
        if self.recreate_topic:
            r = s.recreate
            produce_incarnation(self.broker.bootstrap, self.recreate_topic, r.partitions, r.old_records, "old")
            self.old_incarnation = read_topic(self.broker.bootstrap, self.recreate_topic, r.partitions)
        self.phase = "starting"
        backup, restore = self.start_role("backup"), self.start_role("restore")
        self._wait_ready(backup, restore)
        self.say(f"both followers run {self.now() - backup.started:.1f}s after they started: this is t=0")
        self._t0 = time.monotonic()
        self.say("t=0: faults and production start")
        self.phase = "faults"
        for step in s.steps:
            self.schedule_step(step)
        self.workload.start()
        self._loop(until=s.duration)
        self._end()
        return self.violations

    def _create_topics(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, **QUIET})
        new = [NewTopic(t, n, 1, config={"retention.ms": "-1"}) for t, n in self.topics.items()]
        if self.schedule.precreate_targets:
            new += [NewTopic(self.targets[t], n, 1, config={"retention.ms": "-1"}) for t, n in self.topics.items()]
        if self.recreate_topic:
            new.append(
                NewTopic(self.recreate_topic, self.schedule.recreate.partitions, 1, config={"retention.ms": "-1"})
            )
        for future in admin.create_topics(new, operation_timeout=30).values():
            future.result()

    def _wait_ready(self, backup: CliProcess, restore: CliProcess) -> None:
        deadline = time.monotonic() + READY_LIMIT
        while time.monotonic() < deadline:
            self.supervise()
            if not backup.running or not restore.running:
                raise RuntimeError(
                    f"a follower ended while starting: {backup.describe_end()} / {restore.describe_end()}"
                )
            # the backup has its Spark session; the restore has listed the bucket once (it starts Spark only when
            # there is something to restore)
            if "spark session ready" in backup.output() and re.search(r"kafka_s3\.(restore|read)", restore.output()):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the followers did not start within {READY_LIMIT:.0f}s (see {self.workdir})")

    def _loop(self, until: float) -> None:
        """Run due actions until ``until`` (seconds after t=0); an action returning True is tried a second later."""
        while True:
            self.supervise()
            now = self.now()
            while self._actions and self._actions[0].at <= now:
                action = heapq.heappop(self._actions)
                if action.run():
                    self.at(now + 1.0, action.name, action.run)
            if now >= until:
                return
            time.sleep(0.2)

    def _end(self) -> None:
        self.say("end: producers stop, faults stop")
        self.workload.close()
        if self.workload.error is not None:
            raise RuntimeError(f"the producer failed: {self.workload.error}") from self.workload.error
        self.proxy.clear()
        self.say(
            f"producer: {self.workload.produced} records sent, transactions {self.workload.transactions}; "
            f"proxy faults injected: {dict(sorted(self.proxy.injected.items()))}"
        )
        # steps still due (restarts after a late signal, the re-created topic's second backup) run first
        deadline = self.now() + 120
        while any(a.name.startswith(("restart", "t=")) for a in self._actions) and self.now() < deadline:
            self._loop(until=self.now() + 1)
        self._actions = [a for a in self._actions if a.name.startswith("stopped?")]
        for thread in self._threads:
            thread.join(180)
        self.phase = "end"
        for proc in self.running():
            if proc.role in ("backup2", "restore2"):
                self.stop(proc)
        self.source = {t: read_topic(self.broker.bootstrap, t, n, 30, self.say) for t, n in self.topics.items()}
        self.say("source: " + ", ".join(f"{t}: {sum(map(len, r.values()))} committed" for t, r in self.source.items()))
        for proc in self.running("backup"):
            self.stop(proc)
        final_backup = self.start("final-backup", ["backup", "--once", "--no-progress", "-c", str(self.config)], True)
        if self.recreate_topic:
            self._finish_recreate()
        self.ensure("restore")
        self.wait(final_backup)
        converged = self._catch_up()
        for proc in self.running("restore"):
            self.stop(proc)
        if not converged:
            self.say("the restore follower did not catch up: a one-shot restore")
            self.wait(self.start("final-restore", ["restore", "--no-progress", "-c", str(self.config)], True))
        for proc in self.running():
            self.wait(proc)
        for thread in self._threads:
            thread.join(60)
        self.check()

    def _catch_up(self) -> bool:
        """Wait until every target holds as many records as its source (or more: duplicates, no use waiting), as
        long as the follower makes progress: ``CATCH_UP`` seconds without a new record in any target is a stall
        (a violation), whatever the machine's speed."""
        deadline = self.now() + CATCH_UP
        restored = -1
        while True:
            self.supervise()
            counts = {}
            for t, n in self.topics.items():
                got = (
                    read_topic(self.broker.bootstrap, self.targets[t], n, stable_for=1)
                    if self._exists(self.targets[t])
                    else {}
                )
                for p in range(n):
                    counts[(t, p)] = (len(got.get(p, [])), len(self.source[t][p]))
            if all(have == want for have, want in counts.values()):
                self.say("the restore follower caught up")
                return True
            if sum(have for have, _ in counts.values()) > restored:
                restored = sum(have for have, _ in counts.values())
                deadline = self.now() + CATCH_UP
            if any(have > want for have, want in counts.values()) or self.now() > deadline:
                behind = {f"{t}[{p}]": f"{h}/{w}" for (t, p), (h, w) in counts.items() if h != w}
                self.say(f"the restore follower did not catch up (target/source records): {behind}")
                if not any(have > want for have, want in counts.values()):
                    follower = self.running("restore")
                    last = _last_log_line(follower[-1]) if follower else "(not running)"
                    self.violation(
                        f"restore --follow restored nothing for {CATCH_UP:.0f}s before catching up with the final "
                        f"backup: target/source records {behind}; its last log line: {last}"
                    )
                return False
            if not self.running("restore"):
                self.ensure("restore")
            time.sleep(3)

    def _exists(self, topic: str) -> bool:
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": self.broker.bootstrap, **QUIET}).list_topics(timeout=30)
        return topic in metadata.topics

    def _finish_recreate(self) -> None:
        """The re-created topic: a backup after the re-creation must have ended on its own (run one if none did),
        then a one-shot restore of what its bucket holds."""
        for proc in self.running("backup-r"):
            self.wait(proc)
        if self.recreated_at is None or self.recreated_at < 0:
            self.violation("harness: the re-creation step did not run")
            return
        after = [p for p in self.processes if p.role == "backup-r" and p.started >= self.recreated_at]
        if not any(not p.signals for p in after):
            self.wait(
                self.start("backup-r", ["backup", "--once", "--no-progress", "-c", str(self.recreate_config)], True)
            )
        self.start("restore-r", ["restore", "--no-progress", "-c", str(self.recreate_config)], True)

    # ------------------------------------------------------------------------------------------------ checks
    def check(self) -> None:
        self.check_targets()
        if self.recreate_topic:
            self.check_recreated()
        self.check_exits()
        if _code_version() != self.code:
            self.notes.append(f"the code under test changed during the schedule: {self.code} -> {_code_version()}")
        for note in self.notes:
            self.say(f"note: {note}")
        for stall in self.stalls:
            if stall.held:
                when = stall.held[0] - self._t0
                self.say(f"stall: the PUT of {stall.held[1]} was held {stall.seconds}s from t={when:.1f}s")
            else:
                self.say(f"stall: object {stall.nth} of {stall.pattern.pattern} never written ({len(stall.seen)} were)")

    def check_targets(self) -> None:
        aborted = self.workload.aborted if self.workload else set()
        for topic, n in self.topics.items():
            target = self.targets[topic]
            got = read_topic(self.broker.bootstrap, target, n, 30, self.say) if self._exists(target) else {}
            for p in range(n):
                for problem in compare(self.source[topic][p], got.get(p, []), aborted, set()):
                    self.violation(f"{topic}[{p}] -> {target}[{p}]: {problem}")
            self.say(f"checked {target}: " + ", ".join(f"[{p}] {len(got.get(p, []))}" for p in range(n)))

    def check_recreated(self) -> None:
        topic = self.recreate_topic
        r = self.schedule.recreate
        target = f"{topic}-restored"
        after = [
            p for p in self.processes if p.role == "backup-r" and self.recreated_at and p.started >= self.recreated_at
        ]
        before = [p for p in self.processes if p.role == "backup-r" and p not in after]
        whole = any(p.returncode == 0 and not p.signals for p in before)
        stored = sum(self.old_stored.values())
        self.say(f"{topic}: the old incarnation's backup stored {self.old_stored or 'no'} data objects per partition")
        if not stored:
            # nothing of the old log reached the bucket (its backups were killed first): backing the new log up is
            # right, refusing it is not wrong; the target holds a prefix of the new log
            got = read_topic(self.broker.bootstrap, target, r.partitions, 30, self.say) if self._exists(target) else {}
            old_ids = {rec.rid for recs in self.old_incarnation.values() for rec in recs}
            for p in range(r.partitions):
                for problem in compare(self.new_incarnation.get(p, []), got.get(p, []), set(), old_ids, True):
                    self.violation(
                        f"{topic}[{p}] (new incarnation, nothing of the old backed up) -> {target}[{p}]: {problem}"
                    )
            return
        for proc in after:
            if proc.signals:
                continue
            if proc.returncode == 0:
                self.violation(
                    f"{topic}: deleted and re-created with other records ({r.new_records} per partition, "
                    f"{r.old_records} before) at t={self.recreated_at:.1f}s, yet {proc.name} exited 0 instead of "
                    "refusing it"
                )
            elif not any(topic in line for line in proc.error_lines()):
                self.violation(
                    f"{topic}: {proc.name} exited {proc.returncode} after the re-creation without a "
                    f"`kafka-s3: error:` line naming the topic: {proc.error_lines()[-1:] or 'no error line'}"
                )
        got = read_topic(self.broker.bootstrap, target, r.partitions, 30, self.say) if self._exists(target) else {}
        for p in range(r.partitions):
            old = self.old_incarnation.get(p, [])
            problems = compare(old, got.get(p, []), set(), self.new_incarnation_ids, prefix_ok=not whole)
            for problem in problems:
                self.violation(f"{topic}[{p}] (old incarnation) -> {target}[{p}]: {problem}")
        self.say(f"checked {target}: " + ", ".join(f"[{p}] {len(got.get(p, []))}" for p in range(r.partitions)))

    def check_exits(self) -> None:
        for proc in self.processes:
            problem = self.judge(proc)
            self.say(f"exit {proc.describe_end()}" + (f" -> VIOLATION: {problem}" if problem else " -> ok"))
            if problem:
                self.violation(f"{proc.describe_end()}: {problem} (log {proc.log.name})")
            summary = traceback_summary(proc.output())
            if summary:
                self.notes.append(f"{proc.name}: a Python traceback in its output ({summary})")
            if proc.leftovers:
                self.notes.append(f"{proc.name}: its Spark JVM or Python workers outlived it by 20 s (killed)")
            terms = [sig for sig in proc.signals if sig.name == "SIGTERM"]
            if terms and proc.ended is not None and proc.ended - terms[0].at > 30:
                self.notes.append(f"{proc.name}: stopped {proc.ended - terms[0].at:.0f}s after SIGTERM")

    def judge(self, proc: CliProcess) -> str | None:
        """Why ``proc``'s exit code does not say what happened, or None when it does."""
        code = proc.returncode
        if "hung" in proc.notes or "did not stop after SIGTERM" in proc.notes:
            return None  # already reported
        if proc.signals:
            last = proc.signals[-1].name
            if last == "SIGKILL":
                return None if code == -signal.SIGKILL else f"killed with SIGKILL, exit {code} (expected -9)"
            if code in (143, -signal.SIGTERM):
                if code < 0:
                    self.notes.append(f"{proc.name}: died of SIGTERM before its handler was installed (exit {code})")
                return None
            if code == 0 and proc.one_shot:
                return None  # it finished as the signal arrived
            if code == 130:
                return "exit 130 (SIGINT) after SIGTERM (README: 143)"
            return self._judge_own_exit(proc, code, after_signal=True)
        return self._judge_own_exit(proc, code, after_signal=False)

    def _overlaps(self, proc: CliProcess, windows: list[tuple[float, float]], slack: float = 0.0) -> bool:
        end = proc.ended if proc.ended is not None else self.now()
        return any(start - slack <= end and proc.started <= stop + slack for start, stop in windows)

    def _judge_own_exit(self, proc: CliProcess, code: int | None, after_signal: bool) -> str | None:
        errors = proc.error_lines()
        role = proc.role
        if code == 0:
            if role == "backup-r" and self.recreated_at and proc.started >= self.recreated_at:
                return None  # judged by check_recreated
            if proc.one_shot:
                return None
            return "a follower ended on its own with exit 0"
        if code is not None and code < 0:
            return f"died of signal {-code} the harness did not send"
        if not errors:
            return f"exit {code} without a `kafka-s3: error:` line (a silent failure)"
        if role == "backup-r" and self.recreated_at and proc.started >= self.recreated_at:
            return None  # a refusal of the re-created topic: judged by check_recreated
        restores = [p for p in self.processes if p.role in ("restore", "restore2", "final-restore") and p is not proc]
        if code == 6 and role in ("restore", "restore2", "final-restore"):
            others = [p for p in restores if self._overlaps(proc, [(p.started, p.ended or self.now())], LEASE_MEMORY)]
            if not others:
                return "exit 6 (another restore holds the target) while no other restore of it ran"
            if not any(re.search(rf"\b{p.pid}\b", errors[-1]) for p in others):
                pids = ", ".join(f"{p.name} pid {p.pid}" for p in others)
                return f"exit 6 without naming the other run (the restores around it: {pids})"
            return None  # another restore of the same target was live (or its lease not yet expired)
        if code == 2 and proc.bucket_empty and "nothing to restore" in errors[-1]:
            return None  # a one-shot restore before the backup had stored anything: nothing to restore is right
        if code == 8 and role == "restore2":
            return None  # a one-shot restore stopped at a chunk still uploading
        if code == 4 and self._overlaps(proc, self.broker_restarts, slack=150):
            if role in ("backup", "backup2") and not proc.one_shot:
                return "exit 4 after a broker restart (README: a following backup retries Kafka outages)"
            return None  # Kafka unreachable while the broker restarted
        if code == 3 and proc.one_shot and self._overlaps(proc, self.s3_fault_windows, slack=60):
            return None  # the object store failed it past its retries
        return f"exit {code} unexplained by the schedule"

    # ---------------------------------------------------------------------------------------------- teardown
    def close(self) -> None:
        for proc in self.processes:
            if proc.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.popen.wait(30)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self.workload is not None:
            self.workload.stop.set()
            if self.workload.ident is not None:
                self.workload.join(60)
            self.workload.plain = self.workload.txn = None
        if self.proxy is not None:
            with contextlib.suppress(Exception):
                self.proxy.__exit__(None, None, None)
        try:
            if self.broker.controlled:
                self.broker.stop()
            else:
                self._delete_topics()
        finally:
            self._timeline.close()

    def _delete_topics(self) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, **QUIET})
        names = [*self.topics, *self.targets.values(), f"{self.id}-offset-map"]
        if self.recreate_topic:
            names += [self.recreate_topic, f"{self.recreate_topic}-restored"]
        existing = set(admin.list_topics(timeout=30).topics)
        for future in admin.delete_topics([n for n in names if n in existing], operation_timeout=30).values():
            with contextlib.suppress(Exception):
                future.result()

    def _keys(self, bucket: str, prefix: str) -> list[str]:
        keys = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return keys

    def dump_bucket(self) -> None:
        """The buckets' keys and sizes, for a post-mortem of a failed schedule."""
        with open(self.workdir / "buckets.txt", "w") as out:
            for bucket in (self.bucket, self.recreate_bucket if self.recreate_topic else None):
                if not bucket:
                    continue
                with contextlib.suppress(Exception):
                    for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                        for item in page.get("Contents", []):
                            out.write(f"{bucket}/{item['Key']} {item['Size']}\n")


def _code_version() -> str:
    """The commit under test, and whether src/ has changes not committed yet (the working tree is what runs)."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--short", "src"], cwd=root, capture_output=True, text=True)
    except OSError:
        return "unknown (no git)"
    if not dirty.stdout.strip():
        return head.stdout.strip()
    diff = subprocess.run(["git", "diff", "HEAD", "--", "src"], cwd=root, capture_output=True)
    digest = hashlib.sha1(diff.stdout + dirty.stdout.encode()).hexdigest()[:8]
    return f"{head.stdout.strip()} with {len(dirty.stdout.splitlines())} uncommitted file(s) in src/ (diff {digest})"


def traceback_summary(output: str) -> str | None:
    """The first traceback's exception lines (``Kind: message``), or None when the output has none."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Exception ignored"):
            return line[:200]
        if line.startswith("Traceback (most recent call last)"):
            raised = [
                x
                for x in lines[i + 1 : i + 80]
                if x and not x[0].isspace() and not x.startswith(("Traceback", "During handling"))
            ]
            return " / ".join(x[:160] for x in raised[:2])
    return None


def retry(call: Callable, what: str, limit: float = 180.0):
    """``call()`` until it succeeds, for up to ``limit`` seconds (a harness step meeting a broker restart)."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return call()
        except Exception as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: {exc}") from exc
            time.sleep(1)


def _last_log_line(proc: CliProcess) -> str:
    """The newest line the process logged itself (not librdkafka's), with its time."""
    lines = [line for line in proc.output().splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    return lines[-1][:300] if lines else "(none)"


def produce_incarnation(bootstrap: str, topic: str, partitions: int, per_partition: int, tag: str) -> set[str]:
    """``per_partition`` plain records into each partition of ``topic``, marked with ``tag``; returns their ids."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, **QUIET})
    ids = set()
    base = int(time.time() * 1000)
    for p in range(partitions):
        for i in range(per_partition):
            rid = f"{topic}/{tag}/{p}/{i}"
            ids.add(rid)
            producer.produce(
                topic,
                key=f"{tag}-{i % 7}".encode(),
                value=f"{rid}|{tag}".encode(),
                partition=p,
                headers=[("id", rid.encode()), ("incarnation", tag.encode()), ("incarnation", b"again")],
                timestamp=base - i,
            )
            producer.poll(0)
    if producer.flush(60):
        raise RuntimeError(f"the {tag} records of {topic} were not delivered within 60 s")
    return ids


# ---------------------------------------------------------------------------------------------------- invariants
def ranges(offsets: list[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` → ``1..3, 7, 9..10``."""
    out: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(offsets)), key=lambda x: x[1] - x[0]):
        items = [o for _, o in group]
        out.append(f"{items[0]}..{items[-1]}" if len(items) > 1 else str(items[0]))
    if len(out) > 12:
        out = [*out[:12], f"… ({len(out) - 12} more ranges)"]
    return ", ".join(out)


def source_ranges(indices: list[int], source: list[Rec]) -> str:
    """Runs of consecutive source records (by position: offsets skip transaction markers and aborted records),
    shown by their offsets."""
    out: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(indices)), key=lambda x: x[1] - x[0]):
        items = [source[i].offset for _, i in group]
        out.append(f"{items[0]}..{items[-1]} ({len(items)})" if len(items) > 1 else f"{items[0]} (1)")
    if len(out) > 12:
        out = [*out[:12], f"… ({len(out) - 12} more ranges)"]
    return ", ".join(out)


def compare(
    source: list[Rec], target: list[Rec], aborted: set[str], foreign: set[str], prefix_ok: bool = False
) -> list[str]:
    """What differs between a source partition's committed records and its target partition: missing records
    (source offsets), duplicates, order, altered fields, records that are not the source's (aborted transactions,
    another incarnation's, unknown), each with offsets. ``prefix_ok``: the target may hold a prefix only."""
    problems: list[str] = []
    by_id = {r.rid: i for i, r in enumerate(source)}
    seen: dict[int, list[int]] = {}
    order: list[int] = []
    strangers: dict[str, list[int]] = {}
    altered: list[str] = []
    for rec in target:
        index = by_id.get(rec.rid)
        if index is None:
            kind = (
                "records of aborted transactions"
                if rec.rid in aborted
                else "records of the re-created topic's new incarnation"
                if rec.rid in foreign
                else "records the source never held"
            )
            strangers.setdefault(kind, []).append(rec.offset)
            continue
        seen.setdefault(index, []).append(rec.offset)
        order.append(index)
        if rec.fields() != source[index].fields() and len(altered) < 5:
            src = source[index]
            fields = [
                name
                for name, a, b in zip(("key", "value", "headers", "timestamp"), src.fields(), rec.fields(), strict=True)
                if a != b
            ]
            altered.append(f"source offset {src.offset} -> target offset {rec.offset}: {', '.join(fields)} differ")
    missing = [i for i in range(len(source)) if i not in seen]
    if missing:
        if prefix_ok and missing == list(range(missing[0], len(source))):
            pass  # a prefix: what was backed up before the backup stopped
        else:
            shown = source_ranges(missing, source)
            problems.append(f"missing {len(missing)} of {len(source)} committed records, source offsets {shown}")
    duplicates = {i: offsets for i, offsets in seen.items() if len(offsets) > 1}
    if duplicates:
        shown = ", ".join(
            f"source {source[i].offset} at target {'/'.join(map(str, offsets))}"
            for i, offsets in sorted(duplicates.items())[:5]
        )
        problems.append(
            f"{sum(len(o) - 1 for o in duplicates.values())} duplicates of {len(duplicates)} records, source "
            f"offsets {source_ranges(list(duplicates), source)}; e.g. {shown}"
        )
    firsts = sorted((offsets[0], i) for i, offsets in seen.items())
    inversions = [(a, b) for (_, a), (_, b) in itertools.pairwise(firsts) if b < a]
    if inversions:
        a, b = inversions[0]
        problems.append(
            f"out of order: {len(inversions)} inversions; e.g. source offset {source[b].offset} restored after "
            f"source offset {source[a].offset}"
        )
    if altered:
        problems.append("altered records: " + "; ".join(altered))
    for kind, offsets in strangers.items():
        problems.append(f"{len(offsets)} {kind} at target offsets {ranges(offsets)}")
    return problems
