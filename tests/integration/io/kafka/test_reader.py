"""The offset-range reader against the real broker: exactly ``[start, end)``, across the gaps transactions leave
(commit/abort markers take offsets, aborted records are hidden under read_committed), ending even when no record
sits at ``end - 1``."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from kafka_s3.core.errors import KafkaError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range

pytestmark = pytest.mark.integration


def offsets_read(bootstrap: str, topic: str, start: int, end: int, **kwargs) -> list[int]:
    batches = read_range({"bootstrap.servers": bootstrap}, topic, 0, start, end, stall_timeout=30, **kwargs)
    return [o for batch in batches for o in batch.column("offset").to_pylist()]


@pytest.fixture
def transactional_topic(fresh_topic, kafka_bootstrap):
    """Offsets 0-2 committed (marker at 3), 4-5 aborted (marker at 6), 7-8 committed (marker at 9): end offset 10."""
    topic = fresh_topic(1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"reader-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for values, commit in ((["a", "b", "c"], True), (["x", "y"], False), (["d", "e"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value.encode(), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    assert Admin({"bootstrap.servers": kafka_bootstrap}).end_offsets([(topic, 0)])[(topic, 0)] == 10
    return topic


def test_read_committed_skips_aborted_records_and_markers_and_ends(transactional_topic, kafka_bootstrap):
    assert offsets_read(kafka_bootstrap, transactional_topic, 0, 10) == [0, 1, 2, 7, 8]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 4, [0, 1, 2]),  # end-1 is a commit marker
        (3, 7, []),  # only a marker and aborted records: nothing, and no hang
        (5, 10, [7, 8]),  # starting inside the aborted records
        (1, 2, [1]),
    ],
)
def test_ranges_whose_ends_hold_no_record(transactional_topic, kafka_bootstrap, start, end, expected):
    assert offsets_read(kafka_bootstrap, transactional_topic, start, end) == expected


def test_read_uncommitted_sees_the_aborted_records(transactional_topic, kafka_bootstrap):
    assert offsets_read(kafka_bootstrap, transactional_topic, 0, 10, isolation_level="read_uncommitted") == [
        0,
        1,
        2,
        4,
        5,
        7,
        8,
    ]


@pytest.fixture
def truncated_topic(fresh_topic, kafka_bootstrap):
    """Offsets 0-4 written, 0-2 deleted (DeleteRecords): the log starts at 3 and ends at 5."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = fresh_topic(1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, b"%d" % i, partition=0)
    producer.flush(30)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept alive until its future completes
    for future in admin.delete_records([TopicPartition(topic, 0, 3)]).values():
        future.result(30)
    return topic


def test_a_start_below_the_log_start_is_an_error_naming_it_never_a_silent_skip(truncated_topic, kafka_bootstrap):
    with pytest.raises(
        KafkaError, match=rf"{truncated_topic}\[0\]: offset 1 is no longer in the log, which starts at 3"
    ):
        offsets_read(kafka_bootstrap, truncated_topic, 1, 5)
    assert offsets_read(kafka_bootstrap, truncated_topic, 3, 5) == [3, 4]


def test_a_start_past_the_log_end_is_an_error_saying_so(truncated_topic, kafka_bootstrap):
    with pytest.raises(KafkaError, match=rf"{truncated_topic}\[0\]: offset 7 is past the end of the log \(5\)"):
        offsets_read(kafka_bootstrap, truncated_topic, 7, 9)


# ------------------------------------------------------------------------------------------------ one consumer a task
def _shared_reads(bootstrap: str, ranges: list[tuple[str, int, int, int]], ahead, threads: int = 4) -> dict:
    """Read each (topic, partition, start, end) of ``ranges`` through one TaskConsumer, ``threads`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from kafka_s3.io.kafka.reader import TaskConsumer

    reader = TaskConsumer({"bootstrap.servers": bootstrap}, ahead=ahead)

    def read(r: tuple[str, int, int, int]) -> tuple[tuple[str, int, int, int], list[int]]:
        topic, partition, start, end = r
        batches = read_range({}, topic, partition, start, end, stall_timeout=30, shared=reader)
        return r, [o for batch in batches for o in batch.column("offset").to_pylist()]

    try:
        with ThreadPoolExecutor(threads) as pool:
            return dict(pool.map(read, ranges))
    finally:
        reader.shutdown()


@pytest.mark.issue(30, item=1)
def test_one_task_consumer_reads_many_ranges_at_once_each_exactly_its_offsets(fresh_topic, produce, kafka_bootstrap):
    partitions = 24
    topic = fresh_topic(partitions)
    produce(topic, [{"partition": p, "value": b"v%d" % i} for p in range(partitions) for i in range(5 + p)])
    ranges = [(topic, p, p % 3, 5 + p - p % 2) for p in range(partitions)]
    # read ahead from offset 0: ranges starting elsewhere are assigned again at their own start
    ahead = [(topic, p, 0, 5 + p) for p in range(partitions)]

    read = _shared_reads(kafka_bootstrap, ranges, ahead)

    assert read == {r: list(range(r[2], r[3])) for r in ranges}


@pytest.mark.issue(30, item=1)
def test_a_task_consumer_reads_a_partition_again_from_an_earlier_offset_and_across_transaction_markers(
    transactional_topic, kafka_bootstrap
):
    from kafka_s3.io.kafka.reader import TaskConsumer

    reader = TaskConsumer({"bootstrap.servers": kafka_bootstrap}, ahead=[(transactional_topic, 0, 0, 10)])
    try:

        def offsets(start: int, end: int) -> list[int]:
            batches = read_range({}, transactional_topic, 0, start, end, stall_timeout=30, shared=reader)
            return [o for batch in batches for o in batch.column("offset").to_pylist()]

        assert offsets(5, 10) == [7, 8]  # ends on a commit marker: no record at end - 1
        assert offsets(0, 4) == [0, 1, 2]  # the same partition again, from before where it was read
        assert offsets(0, 10) == [0, 1, 2, 7, 8]
    finally:
        reader.shutdown()


@pytest.mark.issue(30, item=1)
def test_a_task_consumer_names_a_start_below_the_log_start(truncated_topic, kafka_bootstrap):
    from kafka_s3.io.kafka.reader import TaskConsumer

    reader = TaskConsumer({"bootstrap.servers": kafka_bootstrap})
    try:
        with pytest.raises(KafkaError, match=rf"{truncated_topic}\[0\]: offset 1 is no longer in the log"):
            list(read_range({}, truncated_topic, 0, 1, 5, stall_timeout=30, shared=reader))
        batches = read_range({}, truncated_topic, 0, 3, 5, stall_timeout=30, shared=reader)
        assert [o for b in batches for o in b.column("offset").to_pylist()] == [3, 4]
    finally:
        reader.shutdown()
