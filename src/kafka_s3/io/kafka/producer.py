"""Writing a restore's records to one target partition, with its progress: the counterpart of :mod:`.reader`.

One producer per target partition: transactional (its id fixed per restore and source partition, so starting it
fences a killed run's zombie and aborts what that run left open) or, at-least-once, idempotent. The restore's
progress — the next source offset — is the offset of a consumer group on the target partition: committed inside the
transaction that holds the records it covers (``send_offsets_to_transaction``), or after they are delivered. Records
that may go with it (the offset map) are produced in the same transaction. Every refusal is named: the ACL a
refused request needs, the record a size limit refuses, another run that fenced this one.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_s3.core.errors import DataError, KafkaError, KafkaS3Error, PlanError
from kafka_s3.core.groups import OffsetMap
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.clients import holding_records, quiet_settings
from kafka_s3.io.kafka.denied import TOPIC_AUTHORIZATION_FAILED, denial, principal

if TYPE_CHECKING:
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import KafkaException, Producer

MSG_SIZE_TOO_LARGE = 10  # librdkafka's code of a record over a size limit (the broker's or the producer's)
UNKNOWN_PARTITION_WAIT_S = 30.0  # a topic created a moment ago: how long its partitions may stay unknown
FENCED_CODES = (47, 90, -144)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, librdkafka's _FENCED
PRODUCER_DEFAULTS = {
    "enable.idempotence": "true",
    "linger.ms": "20",
    "batch.size": "1000000",
    "queue.buffering.max.messages": "1000000",
    "queue.buffering.max.kbytes": "1048576",
}


@dataclass(frozen=True)
class Target:
    """The partition written, the group its progress is committed to, and what messages name."""

    topic: str
    partition: int
    group: str
    transactional_id: str | None  # None: at-least-once, progress committed after delivery
    source: str  # the source partition its records come from ("orders[0]")

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


@dataclass
class Delivery:
    """What the broker confirmed: target offsets, the source offset each record came from, the first errors."""

    who: str = ""  # the producer's principal (``User:name``), named when a write is refused
    first_target: int | None = None
    last_target: int | None = None
    errors: list[str] = field(default_factory=list)
    # Source offsets of produced records not yet reported delivered: one partition's delivery reports come in
    # production order (idempotent producer), so each report is the oldest of them.
    in_flight: deque[int] = field(default_factory=deque)
    delivered: OffsetMap = field(default_factory=OffsetMap)  # since the last progress commit

    def on_delivery(self, err: RdKafkaError | None, msg: Any) -> None:
        # msg: a confluent_kafka Message, left untyped: its offset() is typed Optional though a delivered message
        # always has one, and a cast per record would cost in this per-record callback
        source = self.in_flight.popleft() if self.in_flight else None
        if err is not None:
            if len(self.errors) < 5:
                hint = ""
                if err.code() == MSG_SIZE_TOO_LARGE:
                    size = len(msg.key() or b"") + len(msg.value() or b"")
                    hint = f" (a record of {size} bytes: raise the topic's max.message.bytes above it)"
                elif err.code() == TOPIC_AUTHORIZATION_FAILED:
                    hint = f" ({self.who} lacks WRITE on topic '{msg.topic()}')"
                self.errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}{hint}")
            return
        offset = msg.offset()
        if source is not None:
            self.delivered.add(source, offset)
        if self.first_target is None or offset < self.first_target:
            self.first_target = offset
        if self.last_target is None or offset > self.last_target:
            self.last_target = offset

    def forget_pending(self) -> None:
        """After an abort: nothing sent since the last commit will be reported delivered or count as delivered."""
        self.delivered = OffsetMap()
        self.in_flight.clear()


class PartitionProducer:
    """The producer of one target partition and the consumer its progress is read and committed with."""

    def __init__(self, target: Target, producer_settings: Mapping[str, str], consumer_settings: Mapping[str, str]):
        from confluent_kafka import Consumer, Producer

        self.target = target
        self.producer_settings = producer_settings
        self.consumer_settings = consumer_settings
        self.delivery = Delivery(who=principal(producer_settings))
        self.in_transaction = False
        self._metadata_wait_until: float | None = None
        # librdkafka's own log lines (a connection refused every few milliseconds while a broker restarts): debug
        self.consumer = Consumer(
            quiet_settings({**consumer_settings, "group.id": target.group, "enable.auto.commit": "false"})
        )
        settings = {**PRODUCER_DEFAULTS, **producer_settings}
        if target.transactional_id:
            settings["transactional.id"] = target.transactional_id
        self.producer: Producer = Producer(quiet_settings(settings))

    @property
    def exactly_once(self) -> bool:
        return self.target.transactional_id is not None

    # ------------------------------------------------------------------------------------------------ start
    def fence(self) -> None:
        """Start the transactional producer: any other producer of this id (a killed run's zombie, another run of
        the restore) is fenced, and what it left open is aborted. Before progress is read: it is final then."""
        if self.exactly_once:
            retry.call(
                f"init_transactions of transactional.id {self.target.transactional_id!r}",
                lambda remaining: self.producer.init_transactions(min(60.0, remaining)),
                60.0,
            )

    def progress(self) -> tuple[int | None, str]:
        """The committed progress (next source offset) and the metadata it was committed with."""
        from confluent_kafka import KafkaException, TopicPartition

        where = TopicPartition(self.target.topic, self.target.partition)

        def attempt(remaining: float) -> tuple[int | None, str]:
            found = self.consumer.committed([where], timeout=min(30.0, remaining))[0]
            if found.error is not None:
                raise KafkaException(found.error)
            return (found.offset if found.offset >= 0 else None), found.metadata or ""

        return retry.call(f"read restore progress of {self.target} from group {self.target.group!r}", attempt, 30.0)

    def end_offset(self) -> int:
        """The target partition's high watermark (0: never written since it was created)."""
        from confluent_kafka import TopicPartition

        where = TopicPartition(self.target.topic, self.target.partition)
        _, end = retry.call(
            f"read the end offset of {self.target}",
            lambda remaining: self.consumer.get_watermark_offsets(where, timeout=min(30.0, remaining), cached=False),
            60.0,
        )
        return int(end)

    def holds_records(self) -> bool:
        """Whether a reader sees a record in the target partition (aborted transactions leave offsets, not records)."""
        target = (self.target.topic, self.target.partition)
        return target in holding_records(self.consumer_settings, [target], f"{self.target.group}-probe")

    # ------------------------------------------------------------------------------------------------ records
    def produce(self, batch: pa.RecordBatch, schema_ids: Sequence[tuple[int, int]] = ()) -> None:
        """Send a batch of records (inside the open transaction, which this begins when none is). ``schema_ids``:
        source -> target schema ids to rewrite in wire-format keys and values."""
        from confluent_kafka import KafkaException

        if self.exactly_once and not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True
        keys = batch.column("key").to_pylist()
        sources = batch.column("offset").to_pylist()
        values = batch.column("value").to_pylist()
        if schema_ids:
            from kafka_s3.core.schemas import rewrite_schema_id

            ids = dict(schema_ids)
            keys = [rewrite_schema_id(k, ids) for k in keys]
            values = [rewrite_schema_id(v, ids) for v in values]
        stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
        headers_col = batch.column("headers")
        header_offsets = headers_col.offsets.to_pylist() if len(headers_col) else [0]
        flat = headers_col.values
        header_keys = flat.field("key").to_pylist() if len(flat) else []
        header_values = flat.field("value").to_pylist() if len(flat) else []
        topic, partition = self.target.topic, self.target.partition
        produce, poll = self.producer.produce, self.producer.poll
        on_delivery = self.delivery.on_delivery
        in_flight = self.delivery.in_flight
        for i in range(batch.num_rows):
            lo, hi = header_offsets[i], header_offsets[i + 1]
            headers = [(header_keys[j], header_values[j]) for j in range(lo, hi)] if hi > lo else None
            ts = stamps[i]
            while True:
                try:
                    if ts is None:
                        produce(
                            topic, values[i], keys[i], partition=partition, headers=headers, on_delivery=on_delivery
                        )
                    else:
                        produce(
                            topic,
                            values[i],
                            keys[i],
                            partition=partition,
                            headers=headers,
                            timestamp=ts // 1000,
                            on_delivery=on_delivery,
                        )
                    in_flight.append(sources[i])
                    break
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:
                    if _unknown_partition(exc) and time.monotonic() < self._metadata_deadline():
                        poll(0.1)  # a topic created a moment ago: the producer's metadata catches up
                        continue
                    raise self._fenced(exc) or self._produce_error(exc, batch, i, keys[i], values[i], headers) from None
            if i % 1000 == 0:
                poll(0)

    def _metadata_deadline(self) -> float:
        if self._metadata_wait_until is None:
            self._metadata_wait_until = time.monotonic() + UNKNOWN_PARTITION_WAIT_S
        return self._metadata_wait_until

    # ------------------------------------------------------------------------------------------------ progress
    def delivered(self) -> OffsetMap:
        """Wait until every record sent is delivered and hand over what was (source -> target offsets) since the
        last call; a record the broker refused fails here, naming it (a failed transaction's cause, under
        exactly-once: its commit is refused and commits nothing)."""
        from confluent_kafka import KafkaException

        remaining = self.producer.flush(120)
        if remaining:
            raise KafkaError(f"{self.target}: {remaining} records not delivered")
        if self.delivery.errors:
            if self.exactly_once:
                try:
                    self.producer.commit_transaction(10)
                except KafkaException as cause:
                    raise self._refused(cause, self.producer_settings) from None
            raise KafkaError("produce failed: " + "; ".join(self.delivery.errors))
        delivered, self.delivery.delivered = self.delivery.delivered, OffsetMap()
        return delivered

    def commit(
        self,
        next_offset: int,
        metadata: str,
        also: Callable[[OffsetMap], tuple[str, bytes, bytes] | None] | None = None,
    ) -> None:
        """Commit progress ``next_offset`` (with ``metadata``) once every record sent so far is delivered;
        ``also(delivered)`` gives a record ``(topic, key, value)`` to write with it from what was delivered since the
        last commit (the offset map), in the same transaction under exactly-once: a crash loses both or neither.
        Progress never passes a record that was not delivered: a rerun restores it again."""
        from confluent_kafka import TopicPartition

        offsets = [TopicPartition(self.target.topic, self.target.partition, next_offset, metadata=metadata)]
        if self.exactly_once and not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True
        delivered = self.delivered()
        record = also(delivered) if also is not None else None
        if record is not None:
            topic, key, value = record
            self.producer.produce(topic, value, key, partition=0)
        if self.exactly_once:
            retry.call(
                f"send restore progress of {self.target} to the transaction",
                self._step(
                    lambda remaining: self.producer.send_offsets_to_transaction(
                        offsets, self.consumer.consumer_group_metadata(), min(60.0, remaining)
                    )
                ),
                60.0,
            )
            retry.call(
                f"commit the transaction of {self.target}",
                self._step(lambda remaining: self.producer.commit_transaction(min(120.0, remaining))),
                120.0,
            )
            self.in_transaction = False
        else:
            if record is not None and self.producer.flush(120):
                raise KafkaError(f"{self.target}: what goes with its progress (the offset map) was not delivered")
            self._commit_offsets(offsets)
        if self.delivery.errors:
            raise KafkaError("produce failed: " + "; ".join(self.delivery.errors))

    def abort(self, timeout: float = 60.0) -> None:
        """Abort the open transaction: its records and its progress are discarded together."""
        if self.exactly_once and self.in_transaction:
            self.producer.abort_transaction(timeout)
            self.in_transaction = False
        self.delivery.forget_pending()

    def close(self) -> None:
        self.consumer.close()

    # ------------------------------------------------------------------------------------------------ refusals
    def _step(self, call: Callable[[float], None]) -> Callable[[float], None]:
        """A transaction step whose failure is not retriable: another run that fenced this one, or the ACL it needs
        when the cluster refused it (the transaction's stored cause when the step only reports the aborted state)."""
        from confluent_kafka import KafkaException

        def attempt(remaining: float) -> None:
            try:
                call(remaining)
            except KafkaException as exc:
                fenced = self._fenced(exc)
                if fenced is not None:
                    raise fenced from None
                if retry.retriable(exc):
                    raise
                raise self._refused(self._txn_cause(exc), self.producer_settings) from None

        return attempt

    def _commit_offsets(self, offsets: list[Any]) -> None:
        from confluent_kafka import KafkaException

        def attempt(remaining: float) -> None:
            try:
                committed = self.consumer.commit(offsets=offsets, asynchronous=False) or []
            except KafkaException as exc:
                if retry.retriable(exc):
                    raise
                raise self._refused(exc, self.consumer_settings) from None
            for tp in committed:
                if tp.error is not None:
                    raise self._refused(KafkaException(tp.error), self.consumer_settings)

        retry.call(f"commit restore progress of {self.target} to group {self.target.group!r}", attempt, 60.0)

    def _txn_cause(self, exc: KafkaException) -> KafkaException:
        """The error that failed the transaction when ``exc`` only says its state is wrong: a refused write fails the
        transaction in the background, and the next call reports just "Erroneous state". A transaction that requires
        abort cannot commit: ``commit_transaction`` then raises the stored cause (and commits nothing)."""
        from confluent_kafka import KafkaException

        error = exc.args[0] if exc.args else None
        if error is None or not hasattr(error, "txn_requires_abort") or not error.txn_requires_abort():
            return exc
        try:
            self.producer.commit_transaction(10)
        except KafkaException as cause:
            return cause
        return exc

    def _fenced(self, exc: Exception) -> PlanError | None:
        """A transactional producer fenced by another one of the same id: another run of this restore took over the
        partition. This run stops (its open transaction is aborted by the fence); the other goes on from the
        progress committed so far."""
        error = retry.error_of(exc)
        if error is None or error.code() not in FENCED_CODES:
            return None
        return PlanError(
            f"{self.target}: another run of this restore took over this partition (its producer with "
            f"transactional.id {self.target.transactional_id!r} fenced this run's): this run stopped, and nothing of "
            f"its open transaction was committed ({error.str()})"
        )

    def _refused(self, exc: Exception, settings: Mapping[str, str]) -> Exception:
        """A refused progress commit (or write) as the ACL it needs: committing offsets takes READ on the group and on
        the target topic (the restore's progress is the group's offsets of the target partitions)."""
        error: Any = exc.args[0] if exc.args else None
        code = error.code() if hasattr(error, "code") else None
        text = error.str() if hasattr(error, "str") else str(exc)
        writing = "add partition" in text.lower()  # the transaction took in the target partition: a write, refused
        needed = denial(
            code,
            settings,
            topic=self.target.topic,
            group=self.target.group,
            transactional_id=self.target.transactional_id or "",
            write=writing,
        )
        if not needed:
            return exc
        if writing:
            return KafkaError(f"{self.target}: the restore's writes were refused: {needed} ({text})")
        return KafkaError(
            f"{self.target}: committing the restore's progress was refused: {needed} (progress is stored as group "
            f"'{self.target.group}' offsets of the target partitions) ({text})"
        )

    def _produce_error(
        self,
        exc: KafkaException,
        batch: pa.RecordBatch,
        row: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
    ) -> KafkaS3Error:
        """A record the producer refuses before sending it, named by its source position (and, for its size, with
        the properties that bound it): the project's error, not librdkafka's bare code."""
        from confluent_kafka import KafkaError as RdKafkaError

        error = exc.args[0] if exc.args else None
        text = error.str() if isinstance(error, RdKafkaError) else str(exc)
        offset = batch.column("offset")[row].as_py()
        where = f"record {self.target.source} offset {offset}"
        if isinstance(error, RdKafkaError) and error.code() == RdKafkaError.MSG_SIZE_TOO_LARGE:
            size = len(key or b"") + len(value or b"") + sum(len(k) + len(v or b"") for k, v in headers or ())
            return DataError(
                f"{where} is {size} bytes (key, value and headers), over the producer's limit ({text}): raise "
                f"producer.override.message.max.bytes above {size}, and the target topic {self.target.topic}'s "
                "max.message.bytes (or the broker's message.max.bytes) with it"
            )
        return KafkaError(f"cannot produce {where} to {self.target}: {text}")


def _unknown_partition(exc: Exception) -> bool:
    from confluent_kafka import KafkaError as RdKafkaError

    error = exc.args[0] if exc.args else None
    return isinstance(error, RdKafkaError) and error.code() == RdKafkaError._UNKNOWN_PARTITION
