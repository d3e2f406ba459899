"""A restore's claim on its target topics, in the target cluster's lease topic (:mod:`kafka_s3.core.leases`).

The topic has one partition, so its offsets order every claim; its records carry the broker's time
(``message.timestamp.type=LogAppendTime``) where the broker honours it, so liveness does not depend on the clocks of
the machines restores run on. A claim is renewed from a background thread while the restore runs and released when it
ends; a run killed with ``kill -9`` leaves its claim to expire — at once for a rerun on the same machine, which sees
that the process is gone.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_s3.core.errors import KafkaError, PlanError
from kafka_s3.core.leases import RENEW_MS, TTL_MS, Claim, Heard, Rival, rivals
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.clients import quiet_settings

log = logging.getLogger("kafka_s3.restore")

RETENTION_MS = 24 * 3600 * 1000  # claims are only ever read back TTL_MS * 2 into the past
WINDOW_MS = 2 * TTL_MS
# The lease topic as restores create it (an administrator creating it beforehand should use the same settings)
TOPIC_CONFIG = {
    "retention.ms": str(RETENTION_MS),
    "cleanup.policy": "delete",
    "message.timestamp.type": "LogAppendTime",
}
TIMEOUT_S = 30.0


def _proc(path: str) -> str:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return ""


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (field 22 of ``/proc/<pid>/stat``), "" when unknown."""
    stat = _proc(f"/proc/{pid}/stat")
    return stat.rpartition(")")[2].split()[19] if stat else ""


def ended(claim: Claim) -> bool:
    """Whether the process that wrote ``claim`` is known to be gone: it ran on this machine in this boot, and no
    process of that pid and start time exists (a restore killed with ``kill -9``)."""
    if claim.host != socket.gethostname() or not claim.boot or claim.boot != _proc("/proc/sys/kernel/random/boot_id"):
        return False
    try:
        os.kill(claim.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a process of another user holds that pid
    return bool(claim.process_start) and _process_start(claim.pid) != claim.process_start


class Lease:
    """This run's claim on target topics in ``topic``; :meth:`acquire` again with more targets extends it."""

    def __init__(
        self,
        admin: Admin,
        producer_settings: Mapping[str, str],
        consumer_settings: Mapping[str, str],
        topic: str,
        restore: str,
        source: str,
        run: str,
        group: str,
    ):
        """``group``: the group id its reads use (they commit nothing; a restore may read as its own groups)."""
        self.admin = admin
        self.group = group
        self.producer_settings = dict(producer_settings)
        self.consumer_settings = dict(consumer_settings)
        self.topic = topic
        self.held: dict[str, int] = {}  # target -> offset of this run's first claim of it
        pid = os.getpid()
        self.claim = Claim(
            run=run,
            restore=restore,
            source=source,
            targets=(),
            host=socket.gethostname(),
            pid=pid,
            boot=_proc("/proc/sys/kernel/random/boot_id"),
            process_start=_process_start(pid),
            started=int(time.time() * 1000),
        )
        self._producer: Any = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------------ claims
    def acquire(self, targets: Iterable[str]) -> None:
        """Hold ``targets`` (and those held already), or raise a :class:`PlanError` naming the live restore that
        claimed one of them first; nothing is held then (the claim just made is released)."""
        wanted = set(targets) - set(self.held)
        if not wanted:
            return
        self._ensure_topic()
        claim = self._with(targets=tuple(sorted(set(self.held) | wanted)))
        offset, at = self._write(claim)
        mine = {**self.held, **dict.fromkeys(wanted, offset)}
        found = rivals(self._read(at - WINDOW_MS, offset), claim.run, mine, at, ended)
        if found:
            self.held = {t: o for t, o in mine.items() if t not in wanted}
            self._write(self._with(targets=tuple(sorted(self.held)), released=not self.held))
            raise PlanError(refusal(found, at))
        self.held = mine
        self.claim = claim
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew, name="kafka-s3-lease", daemon=True)
            self._renewer.start()
        log.info("holding %s for this restore (run %s) in %s", ", ".join(sorted(self.held)), claim.run[:12], self.topic)

    def holders(self, targets: Iterable[str]) -> list[Rival]:
        """Live claims of other runs on ``targets`` now (a dry run: claims nothing)."""
        wanted = set(targets)
        if not wanted or self.topic not in self.admin.topics():
            return []
        end = self.admin.end_offsets([(self.topic, 0)], read_committed=False)[(self.topic, 0)]
        now = int(time.time() * 1000)
        heard = self._read(now - WINDOW_MS, end - 1)
        now = max([now, *(h.at for h in heard)])
        return rivals(heard, self.claim.run, dict.fromkeys(wanted, end), now, ended)

    def release(self) -> None:
        """End the claim (idempotent); a failure is logged: the claim then expires by itself."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=TIMEOUT_S)
            self._renewer = None
        if not self.held:
            return
        try:
            self._write(self._with(released=True))
        except KafkaError as exc:
            log.warning("could not release this restore's claim in %s (it expires by itself): %s", self.topic, exc)
        self.held = {}

    # ------------------------------------------------------------------------------------------------ internals
    def _with(self, **changes: Any) -> Claim:
        return Claim(**{**self.claim.__dict__, **changes})

    def _renew(self) -> None:
        warned = False
        while not self._stop.wait(RENEW_MS / 1000):
            try:
                self._write(self.claim)
                warned = False
            except KafkaError as exc:
                if not warned:
                    log.warning("renewing this restore's claim in %s failed (retrying): %s", self.topic, exc)
                    warned = True

    def _ensure_topic(self) -> None:
        if self.topic in self.admin.topics():
            return
        try:
            self.admin.create_topic(self.topic, 1, -1, TOPIC_CONFIG)
            log.info("created topic %s (the restores' claims on their targets, restore.lease.topic)", self.topic)
        except KafkaError:
            if self.topic not in self.admin.topics():  # created by a concurrent restore meanwhile: fine
                raise

    def _write(self, claim: Claim) -> tuple[int, int]:
        """Produce ``claim``; its offset and record time once the broker has it."""
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer(
                quiet_settings(
                    {
                        **self.producer_settings,
                        "enable.idempotence": "true",
                        "acks": "all",
                        "linger.ms": "0",
                        "message.timeout.ms": str(int(TIMEOUT_S * 1000)),
                    }
                )
            )
        delivered: list[Any] = []
        self._producer.produce(
            self.topic, claim.to_bytes(), claim.run.encode(), partition=0, on_delivery=lambda e, m: delivered.append(m)
        )
        self._producer.flush(TIMEOUT_S)
        message = delivered[0] if delivered else None
        if message is None or message.error() is not None:
            why = message.error().str() if message is not None else f"not delivered within {TIMEOUT_S:g} s"
            raise KafkaError(f"Kafka write of this restore's claim to {self.topic}[0] failed: {why}")
        return int(message.offset()), int(message.timestamp()[1])

    def _read(self, since_ms: int, last: int) -> list[Heard]:
        """The claims from record time ``since_ms`` up to offset ``last`` (inclusive)."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        if last < 0:
            return []
        start = self.admin.offsets_for_times([(self.topic, 0)], max(0, since_ms))[(self.topic, 0)]
        consumer = Consumer(
            quiet_settings(
                {
                    **self.consumer_settings,
                    "group.id": self.group,
                    "enable.auto.commit": "false",
                    "isolation.level": "read_uncommitted",
                }
            )
        )
        out: list[Heard] = []
        try:
            consumer.assign([TopicPartition(self.topic, 0, start)])
            deadline = time.monotonic() + TIMEOUT_S
            position = start
            while position <= last:
                if time.monotonic() > deadline:
                    raise KafkaError(f"Kafka read of {self.topic}[0] up to offset {last} timed out")
                for message in consumer.consume(num_messages=1000, timeout=1.0):
                    error = message.error()
                    if error is not None:
                        if retry.retriable(KafkaException(error)):
                            continue
                        raise KafkaError(f"Kafka read of {self.topic}[0] failed: {error.str()}")
                    offset = int(message.offset() or 0)
                    position = offset + 1
                    claim = Claim.from_bytes(message.value())
                    if claim is not None and offset <= last:
                        out.append(Heard(offset, message.timestamp()[1], claim))
        finally:
            consumer.close()
        return out


def refusal(found: list[Rival], now_ms: int) -> str:
    """Why a restore does not start: the targets another live restore holds, and who that is."""
    by_claim: dict[str, list[Rival]] = {}
    for rival in found:
        by_claim.setdefault(rival.claim.run, []).append(rival)
    parts = []
    for group in by_claim.values():
        targets = ", ".join(sorted({r.target for r in group}))
        parts.append(f"{targets}: held by {group[0].claim.describe(max(r.heard for r in group), now_ms)}")
    return (
        "another restore is restoring into the same target topic(s) right now; nothing was produced. "
        + "; ".join(parts)
        + f". Run again once it has ended (a run killed on another machine lets go {TTL_MS // 1000} s after it was "
        "last heard; restore.lease.topic names where restores hold their targets)"
    )
