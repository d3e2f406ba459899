"""What every kafka-s3 Kafka client shares: librdkafka's log kept at debug level, the error codes checked, the
slices a long request is sent in, and the probe of whether a partition holds a record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_s3.core.errors import KafkaError
from kafka_s3.io.kafka import retry

TP = tuple[str, int]

DEFAULT_TIMEOUT = 30.0
# A request that may wait long is sent in slices this long, so that a refused login, an unverifiable certificate or a
# missing ACL (reported beside the request, not by it) ends it within seconds instead of at its timeout.
SLICE = 1.0


class DebugLog:
    """Receives librdkafka's own log lines (``logger`` client setting) and keeps them at debug level: against an
    unreachable broker librdkafka logs a line per connection attempt, every few milliseconds, which buried the one
    error that matters — the failed operation, raised as a :class:`KafkaError` naming the broker."""

    _log = logging.getLogger("kafka_s3.kafka.librdkafka")

    def log(self, level: int, fmt: str, *args: object) -> None:
        self._log.debug(fmt, *args)


def quiet_settings(settings: Mapping[str, str]) -> dict[str, Any]:
    """Client settings whose librdkafka log lines go to the debug log (:class:`DebugLog`)."""
    return {**settings, "logger": DebugLog()}


TIMED_OUT = -185  # librdkafka's local timeout
UNSTABLE_OFFSET_COMMIT = 88  # a group's offsets held by an open transaction


def code_of(exc: BaseException) -> int | None:
    detail = exc.args[0] if getattr(exc, "args", None) else None
    code = getattr(detail, "code", None)
    return code() if callable(code) else None


def failure(operation: str, exc: BaseException) -> KafkaError:
    return KafkaError(f"Kafka {operation} failed: {retry.describe(exc)}")


def holding_records(
    settings: Mapping[str, str], tps: Iterable[TP], group: str, timeout: float = DEFAULT_TIMEOUT
) -> set[TP]:
    """The partitions of ``tps`` in which a ``read_committed`` reader sees at least one record. A high watermark
    above 0 does not say it: aborted transactions (a restore killed before its first commit) leave offsets behind
    and no record. One consumer (of ``group``, which commits nothing) reads from each partition's start until its
    first record or its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
    from confluent_kafka import KafkaError as RdKafkaError

    pending = set(tps)
    if not pending:
        return set()
    consumer = Consumer(
        quiet_settings(
            {
                **settings,
                "group.id": group,
                "enable.auto.commit": "false",
                "enable.partition.eof": "true",
                "isolation.level": "read_committed",
            }
        )
    )
    found: set[TP] = set()
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in sorted(pending)])
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                where = ", ".join(f"{t}[{p}]" for t, p in sorted(pending))
                raise KafkaError(f"Kafka read of the first record of {where} timed out after {timeout:g} s")
            for message in consumer.consume(num_messages=len(pending), timeout=SLICE):
                tp: TP = (str(message.topic()), int(message.partition() or 0))
                error = message.error()
                if error is not None and error.code() != RdKafkaError._PARTITION_EOF:
                    raise KafkaError(f"Kafka read of {tp[0]}[{tp[1]}] failed: {error.str()}")
                if error is None:
                    found.add(tp)
                pending.discard(tp)
    except KafkaException as exc:
        raise failure("read of the first records", exc) from None
    finally:
        consumer.close()
    return found
