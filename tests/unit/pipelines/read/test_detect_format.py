"""Issue 28 item 1: a backup's format, compression, sidecar formats and envelope are found in the bucket, and a
setting that contradicts it is a ConfigError naming the object looked at.

Backups are written by PartitionBackup on a local store (no Kafka, no Spark), read back with only the store set."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.layout import Layout
from kafka_s3.core.records import make_batch
from kafka_s3.core.store import ObjectInfo
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.read.detect_format import Seen
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.lookup import read_records

TOPIC = "orders"
RECORDS = 12

pytestmark = pytest.mark.issue(28, item=1)


def store_settings(root) -> dict[str, str]:
    return {"s3.bucket.name": "b", "store.url": f"file://{root}"}


def back_up(root, prefix: str = "topics", **written: str):
    """RECORDS records of TOPIC[0] backed up under ``prefix`` with the ``written`` settings; the store."""
    raw = {"name": "t", "topics": TOPIC, "flush.size": "5", "topics.dir": prefix, **store_settings(root), **written}
    config = SINK.parse(raw)
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    batch = make_batch(
        [{"offset": o, "topic": TOPIC, "key": b"k%d" % o, "value": b"value-%d" % o} for o in range(RECORDS)]
    )
    writer.write(batch)
    writer.finish(RECORDS, flush_open=True)
    return store


def reading(root, prefix: str = "topics", **settings: str):
    return SOURCE.parse({**store_settings(root), "topics.dir": prefix, **settings})


WRITTEN = [
    ({"format.class": "parquet", "store.envelope": "true"}, {"parquet.codec": "snappy", "store.envelope": True}),
    ({"format.class": "parquet", "parquet.codec": "gzip"}, {"parquet.codec": "gzip", "store.envelope": False}),
    ({"format.class": "json", "s3.compression.type": "gzip"}, {"s3.compression.type": "gzip", "store.envelope": False}),
    ({"format.class": "json", "store.envelope": "true", "s3.compression.type": "zstd"}, {"store.envelope": True}),
    ({"format.class": "avro", "store.envelope": "true"}, {"store.envelope": True}),
    ({"format.class": "avro", "store.kafka.keys": "true", "keys.format.class": "json"}, {"keys.format.class": "json"}),
    ({"format.class": "bytearray", "s3.compression.type": "zstd"}, {"s3.compression.type": "zstd"}),
    ({"format.class": "block_gzip"}, {}),
]


@pytest.mark.parametrize(("written", "expected"), WRITTEN, ids=["-".join(w.values()) for w, _ in WRITTEN])
def test_every_format_and_its_envelope_are_found_in_the_bucket(tmp_path, written, expected):
    store = back_up(tmp_path, **written)
    config, detection = detected(reading(tmp_path), store)
    assert detection.name == "kafka-s3"
    assert config["format.class"] == written["format.class"]
    assert {key: config[key] for key in expected} == expected
    records = read_records(reading(tmp_path), 0, 3, count=4, store=store)
    assert [(r["offset"], r["value"]) for r in records] == [(o, b"value-%d" % o) for o in range(3, 7)]


def test_a_configuration_that_agrees_with_the_bucket_reads_as_before(tmp_path):
    store = back_up(tmp_path, **{"format.class": "parquet", "store.envelope": "true"})
    given = reading(tmp_path, **{"format.class": "parquet", "store.envelope": "true", "parquet.codec": "snappy"})
    config, _ = detected(given, store)
    assert (config["format.class"], config["store.envelope"], config["parquet.codec"]) == ("parquet", True, "snappy")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"format.class": "json"}, r"format.class=json names JSON objects ending .json.*but .* holds Parquet objects"),
        ({"parquet.codec": "gzip"}, r"parquet.codec=gzip, but .* holds Parquet objects \(.snappy.parquet\)"),
        ({"format.class": "parquet", "parquet.codec": "zstd"}, r"parquet.codec=zstd names Parquet objects ending"),
        ({"store.envelope": "false"}, r"store.envelope=false, but .* holds whole records"),
        ({"keys.format.class": "json"}, r"keys.format.class=json, but the keys sidecars under .* are Avro"),
    ],
)
def test_a_setting_that_contradicts_the_bucket_is_an_error_naming_the_setting_and_an_object(tmp_path, setting, message):
    written = {"format.class": "parquet", "store.envelope": "true", "store.kafka.keys": "true"}
    store = back_up(tmp_path, **written)
    with pytest.raises(ConfigError, match=message) as raised:
        detected(reading(tmp_path, **setting), store)
    assert raised.value.key == next(reversed(setting))
    assert f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000." in str(raised.value)


def test_a_prefix_holding_two_formats_is_read_with_the_format_named_and_refused_without(tmp_path):
    """A topic whose format changed between runs: each format's objects stay readable by naming it."""
    back_up(tmp_path, **{"format.class": "json"})
    store = back_up(tmp_path, **{"format.class": "avro"})
    with pytest.raises(ConfigError, match=r"several formats: Avro objects \(.avro\), e.g. .*; JSON objects") as raised:
        detected(reading(tmp_path), store)
    assert raised.value.key == "format.class"
    config, _ = detected(reading(tmp_path, **{"format.class": "json"}), store)
    assert config["format.class"] == "json"
    assert len(read_records(reading(tmp_path, **{"format.class": "json"}), 0, 0, count=RECORDS, store=store)) == 12


def test_a_prefix_without_objects_asks_for_the_format(tmp_path):
    store = back_up(tmp_path, prefix="elsewhere", **{"format.class": "json"})
    with pytest.raises(ConfigError, match=r"format.class is not set and nothing under .*/topics/ tells the format"):
        detected(reading(tmp_path), store)


def test_a_restore_layout_given_still_finds_the_format(tmp_path):
    store = back_up(tmp_path, **{"format.class": "avro", "store.envelope": "true"})
    config, detection = detected(reading(tmp_path, **{"restore.layout": "kafka-s3"}), store)
    assert (detection.detected, config["format.class"], config["store.envelope"]) == (False, "avro", True)


def test_names_tell_data_objects_sidecars_and_manifest_trees_apart():
    seen = Seen(Layout("topics"))
    for key in (
        "topics/orders/partition=0/orders+0+0000000005.keys.avro",
        "topics/orders/partition=0/orders+0+0000000005.snappy.parquet",
        "topics/orders/partition=0/orders+0+0000000000.snappy.parquet",
        "topics/orders/partition=0/orders+0+0000000000.headers.json.gz",
        "topics/orders/partition=0/orders+0+0000000000.index",
        "topics/_kafka-s3/snappy.parquet/orders/0/00000000000000000000.chunk",
        "topics/README.md",
        "topics/orders/notes.txt",
    ):
        assert seen.add(ObjectInfo(key, 10)) == key
    assert {e: x.key for e, x in seen.values.items()} == {
        ".snappy.parquet": "topics/orders/partition=0/orders+0+0000000000.snappy.parquet"
    }
    assert seen.sidecars == {
        "keys": {".avro": "topics/orders/partition=0/orders+0+0000000005.keys.avro"},
        "headers": {".json.gz": "topics/orders/partition=0/orders+0+0000000000.headers.json.gz"},
    }
    assert seen.manifests == {".snappy.parquet": "topics/_kafka-s3/snappy.parquet/orders/0/00000000000000000000.chunk"}


def test_a_format_of_its_own_extension_is_read_as_configured_beside_another_format(tmp_path):
    """format.bytearray.extension=.txt names objects no default name tells: the configuration is taken as it is."""
    back_up(tmp_path, **{"format.class": "json"})
    custom = {"format.class": "bytearray", "format.bytearray.extension": ".txt"}
    store = back_up(tmp_path, **custom)
    config, _ = detected(reading(tmp_path, **custom), store)
    assert config["format.class"] == "bytearray"
    assert len(read_records(reading(tmp_path, **custom), 0, 0, count=RECORDS, store=store)) == RECORDS


def test_a_damaged_first_object_leaves_the_envelope_to_the_configuration(tmp_path):
    """Garbage where the first JSON line should be tells nothing: the read then reports the damage, not a setting."""
    store = back_up(tmp_path, **{"format.class": "json", "store.envelope": "true"})
    first = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000.json"
    (tmp_path / "b" / first).write_bytes(b"\x00garbage\n" * 4)  # the local store's file of that object
    config, _ = detected(reading(tmp_path, **{"store.envelope": "true"}), store)
    assert (config["format.class"], config["store.envelope"]) == ("json", True)


def test_a_restore_without_format_class_plans_with_what_the_bucket_holds(tmp_path):
    """The restore's context finds the format when it opens (its read plugins are built from it), Kafka untouched."""
    from kafka_s3.pipelines.restore.context import RestoreContext

    back_up(tmp_path, **{"format.class": "avro", "store.envelope": "true"})
    ctx = RestoreContext.open(reading(tmp_path, **{"bootstrap.servers": "127.0.0.1:1"}), engine=None)
    assert (ctx.plugins.value_format.name, ctx.plugins.envelope) == ("avro", True)
    assert ctx.detect().name == "kafka-s3"
