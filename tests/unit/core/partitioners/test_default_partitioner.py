"""DefaultPartitioner: ``partition=<kafka partition>``, as Confluent's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.partitioners import REGISTRY
from kafka_s3.core.partitioners.default import DefaultPartitioner
from kafka_s3.core.records import make_batch
from tests.support.partitioners import bytes_values, partitioner


def test_encodes_each_records_kafka_partition():
    records = make_batch([{"offset": 0, "partition": 0}, {"offset": 1, "partition": 7}, {"offset": 2, "partition": 12}])

    encoded = partitioner().encode(records, bytes_values(3), now_ms=0)

    assert encoded.to_pylist() == ["partition=0", "partition=7", "partition=12"]


def test_is_the_default_and_answers_to_confluents_class_name():
    default = partitioner()
    by_class_name = REGISTRY.resolve("io.confluent.connect.storage.partitioner.DefaultPartitioner")

    assert type(default) is DefaultPartitioner and by_class_name is DefaultPartitioner
    assert default.deterministic
    assert default.timestamps(make_batch([{"offset": 0}]), bytes_values(1), now_ms=0) is None


def test_partition_fields_and_path():
    default = partitioner(**{"directory.delim": "#"})

    assert default.partition_fields() == ["partition"]
    assert default.path("orders", "partition=3") == "orders#partition=3"


@settings(deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**31 - 1), min_size=1, max_size=50))
def test_encoding_parses_back_to_the_partition(partitions):
    records = make_batch([{"offset": row, "partition": p} for row, p in enumerate(partitions)])

    encoded = partitioner().encode(records, bytes_values(len(partitions)), now_ms=0).to_pylist()

    parsed = [text.split("=") for text in encoded]
    assert [name for name, _ in parsed] == ["partition"] * len(partitions)
    assert [int(value) for _, value in parsed] == partitions
