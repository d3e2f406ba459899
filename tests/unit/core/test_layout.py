"""Object naming: Confluent's exact names, and parse(build(x)) == x."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layout import Layout

EXTS = {".avro": "data", ".keys.avro": "keys", ".headers.avro": "headers"}


def test_confluent_quickstart_names():
    layout = Layout()
    keys = [layout.object_key("s3_topic/partition=0", "s3_topic", 0, start, ".avro") for start in (0, 3, 6)]
    assert keys == [
        "topics/s3_topic/partition=0/s3_topic+0+0000000000.avro",
        "topics/s3_topic/partition=0/s3_topic+0+0000000003.avro",
        "topics/s3_topic/partition=0/s3_topic+0+0000000006.avro",
    ]


def test_sidecar_names_insert_kind_before_the_sidecar_extension():
    layout = Layout()
    data = "topics/s3_topic/partition=0/s3_topic+0+0000000000.snappy.parquet"
    assert layout.sidecar_key(data, ".snappy.parquet", "keys", ".avro") == (
        "topics/s3_topic/partition=0/s3_topic+0+0000000000.keys.avro"
    )
    assert layout.sidecar_key(data, ".snappy.parquet", "headers", ".json") == (
        "topics/s3_topic/partition=0/s3_topic+0+0000000000.headers.json"
    )


def test_custom_delimiters_and_padding():
    layout = Layout(topics_dir="backups/kafka", directory_delim="/", file_delim="_", zero_pad_width=4)
    key = layout.object_key("orders/region=eu", "orders", 12, 42, ".json.gz")
    assert key == "backups/kafka/orders/region=eu/orders_12_0042.json.gz"
    parsed = layout.parse(key, {".json.gz": "data"})
    assert (parsed.topic, parsed.partition, parsed.start_offset, parsed.directory) == (
        "orders",
        12,
        42,
        "orders/region=eu",
    )


def test_parse_ignores_other_extensions_and_other_prefixes():
    layout = Layout()
    assert layout.parse("topics/t/partition=0/t+0+0000000000.json", EXTS) is None
    assert layout.parse("elsewhere/t/partition=0/t+0+0000000000.avro", EXTS) is None


def test_parse_rejects_bad_names_inside_the_layout():
    layout = Layout()
    with pytest.raises(LayoutError, match="topics/t/partition=0/garbage.avro"):
        layout.parse("topics/t/partition=0/garbage.avro", EXTS)


def test_parse_recognises_sidecars():
    layout = Layout()
    parsed = layout.parse("topics/t/partition=1/t+1+0000000007.headers.avro", EXTS)
    assert parsed.kind == "headers" and parsed.start_offset == 7 and parsed.partition == 1


topic_names = st.from_regex(r"[A-Za-z0-9._-]{1,30}", fullmatch=True)


@given(
    topic=topic_names,
    partition=st.integers(0, 10_000),
    offset=st.integers(0, 10**15),
    width=st.integers(0, 20),
    topics_dir=st.sampled_from(["topics", "a/b", ""]),
    directory=st.sampled_from(["partition=0", "year=2024/month=01", "x=1/y=true"]),
)
def test_parse_inverts_build(topic, partition, offset, width, topics_dir, directory):
    layout = Layout(topics_dir=topics_dir, zero_pad_width=width)
    key = layout.object_key(f"{topic}/{directory}", topic, partition, offset, ".avro")
    parsed = layout.parse(key, EXTS)
    assert (parsed.topic, parsed.partition, parsed.start_offset, parsed.directory, parsed.kind) == (
        topic,
        partition,
        offset,
        f"{topic}/{directory}",
        "data",
    )
