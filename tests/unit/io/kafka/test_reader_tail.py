"""Issue 18: a reader does not wait out its consume timeout at the end of its range.

librdkafka's batch consume returns when it has ``num_messages`` messages or when its timeout passes, whichever is
first. Asking for a full batch when only a few records remain made every task (one per partition range) idle for the
rest of the 1 s timeout at its end; asking for one more than remains waits for the partition-EOF event, which comes
from a fetch the broker holds for ``fetch.wait.max.ms`` (500 ms) at the log end. Measured in isolation, 15,625
records of 1 KiB: 1.2–1.4 s, then 0.6–0.7 s, against 0.13–0.19 s when the last record ends the read (bench/README.md).
The fake consumer below serves a log as librdkafka does and counts the calls that would have waited (for records
that do not exist, or for the EOF event), so no test here measures a time.
"""

from __future__ import annotations

from collections.abc import Callable

import confluent_kafka
import pytest
from confluent_kafka import KafkaError as RdKafkaError
from confluent_kafka import Message

from kafka_s3.io.kafka.reader import read_range


class LogConsumer:
    """Serves ``offsets`` of one partition, then a partition-EOF event, as librdkafka's ``consume`` batches them."""

    instances: list[LogConsumer] = []

    def __init__(self, offsets: list[int]) -> None:
        self.offsets, self.waited = offsets, 0
        self.asked: list[int] = []
        self.queue: list[Message] = []
        LogConsumer.instances.append(self)

    def assign(self, partitions: list[confluent_kafka.TopicPartition]) -> None:
        (tp,) = partitions
        log_end = self.offsets[-1] + 1 if self.offsets else 0
        self.queue = [
            Message(topic=tp.topic, partition=tp.partition, offset=o, key=b"k", value=b"v%d" % o, timestamp=(1, o))
            for o in self.offsets
            if o >= tp.offset
        ] + [
            Message(
                topic=tp.topic, partition=tp.partition, offset=log_end, error=RdKafkaError(RdKafkaError._PARTITION_EOF)
            )
        ]

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        self.asked.append(num_messages)
        records = sum(1 for m in self.queue if m.error() is None)
        if records < num_messages:
            self.waited += 1  # librdkafka blocks for the broker's held EOF fetch, or until ``timeout`` passes
        batch, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        return batch

    def close(self) -> None:
        pass


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[int]], None]:
    """``log(offsets)``: the next reader's consumer serves these offsets."""
    LogConsumer.instances = []

    def serve(offsets: list[int]) -> None:
        monkeypatch.setattr(confluent_kafka, "Consumer", lambda settings: LogConsumer(offsets))

    return serve


def read(start: int, end: int, max_batch: int) -> list[int]:
    batches = read_range({"bootstrap.servers": "unused:9092"}, "t", 0, start, end, max_batch=max_batch)
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_a_range_ending_at_the_log_end_is_read_without_waiting_for_the_timeout(log):
    log(list(range(12)))

    assert read(0, 12, max_batch=5) == list(range(12))
    (consumer,) = LogConsumer.instances
    assert consumer.waited == 0, f"asked {consumer.asked}: the last call waited for records that do not exist"
    assert consumer.asked == [5, 5, 2]  # the last: the 2 remaining records, not the EOF event after them


def test_a_range_ending_inside_the_log_stops_at_its_end(log):
    log(list(range(20)))

    assert read(3, 12, max_batch=5) == list(range(3, 12))
    (consumer,) = LogConsumer.instances
    assert consumer.waited == 0


def test_a_range_with_gaps_is_read_whole(log):
    """Compaction or transaction markers leave fewer records than offsets: those reads still wait (the offsets
    cannot say how many records remain), but every record is read and the EOF event ends the range."""
    offsets = [0, 1, 4, 5, 6, 9, 10, 11, 15]
    log(offsets)

    assert read(0, 16, max_batch=4) == offsets
