"""The kcql partitioner (KCQL's PARTITIONBY): value fields, the key and headers, as Values or KeysAndValues paths."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError, PartitionerError
from kafka_s3.core.partitioners import REGISTRY
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.peers.lenses.partitioner import KcqlPartitioner
from kafka_s3.core.records import make_batch
from tests.support.partitioners import bytes_values, json_values, partitioner, struct_values

ORDER = pa.struct(
    [
        pa.field("region", pa.string()),
        pa.field("shard", pa.int32()),
        pa.field("customer", pa.struct([pa.field("country", pa.string())])),
    ]
)
ORDERS = [
    {"region": "eu", "shard": 3, "customer": {"country": "fr"}},
    {"region": "us", "shard": 7, "customer": {"country": "us"}},
]


def kcql(fields: str, style: str | None = None, **props: str) -> KcqlPartitioner:
    settings = {"partitioner.class": "kcql", "partition.field.name": fields, **props}
    if style:
        settings["partition.path.style"] = style
    return partitioner(**settings)


def records(keys=(b"k1", b"k2"), headers=None):
    headers = headers or [[("country", b"FR"), ("num", b"12")], [("num", b"7"), ("country", b"DE"), ("country", b"X")]]
    return make_batch(
        {"offset": 40 + i, "topic": "t", "key": k, "value": b"{}", "headers": h}
        for i, (k, h) in enumerate(zip(keys, headers, strict=False))
    )


def encode(p, batch, values=None):
    return p.encode(batch, values if values is not None else bytes_values(batch.num_rows), now_ms=0).to_pylist()


def test_headers_make_value_directories_by_default():
    assert encode(kcql("_header.country,_header.num"), records()) == ["FR/12", "DE/7"]


def test_keys_and_values_style_names_each_directory():
    p = kcql("_header.country,_header.num", "KeysAndValues")
    assert encode(p, records()) == ["_header.country=FR/_header.num=12", "_header.country=DE/_header.num=7"]
    assert p.partition_fields() == ["_header.country", "_header.num"]
    assert kcql("_header.country").partition_fields() == []


def test_the_first_header_of_a_repeated_name_counts():
    assert encode(kcql("_header.country"), records()) == ["FR", "DE"]


def test_key_partitions_by_the_whole_key_text():
    assert encode(kcql("_key"), records(keys=(b"alice", b"bob"))) == ["alice", "bob"]


def test_key_field_of_json_keys():
    batch = records(keys=(b'{"id": 5, "tier": {"name": "gold"}}', b'{"id": 6, "tier": {"name": "free"}}'))
    assert encode(kcql("_key.tier.name,_key.id", "KeysAndValues"), batch) == [
        "_key.tier.name=gold/_key.id=5",
        "_key.tier.name=free/_key.id=6",
    ]


@pytest.mark.parametrize("values", [struct_values(ORDERS, ORDER), json_values(ORDERS)], ids=["struct", "json"])
def test_value_fields_mixed_with_key_and_headers_in_the_given_order(values):
    p = kcql("customer.country,_header.num,_value.shard,_key", "KeysAndValues")
    assert p.uses_values
    assert encode(p, records(), values) == [
        "customer.country=fr/_header.num=12/_value.shard=3/_key=k1",
        "customer.country=us/_header.num=7/_value.shard=7/_key=k2",
    ]


def test_only_value_fields_make_the_partitioner_read_values():
    assert not kcql("_header.a,_key").uses_values
    assert kcql("region").uses_values


def test_directories_join_with_the_directory_delimiter():
    assert encode(kcql("_header.country,_header.num", **{"directory.delim": "_"}), records()) == ["FR_12", "DE_7"]


@pytest.mark.parametrize(
    "fields, batch, problem",
    [
        ("_header.missing", records(headers=[[("missing", b"here")], [("other", b"x")]]), "no header 'missing'"),
        ("_header.country", records(headers=[[("country", b"FR")], [("country", None)]]), "no header 'country'"),
        ("_header.country", records(headers=[[("country", b"FR")], [("country", b"\xff")]]), "not UTF-8"),
        ("_key", records(keys=(b"a", None)), "the record has none"),
        ("_key", records(keys=(b"a", b"\xfe")), "UTF-8 text"),
        ("_key.id", records(keys=(b'{"id": 1}', b"not json")), "a JSON object"),
        ("_key.id", records(keys=(b'{"id": 1}', b'{"other": 1}')), "key field 'id' is missing"),
    ],
)
def test_records_without_the_field_are_errors_naming_the_record(fields, batch, problem):
    with pytest.raises(PartitionerError, match=problem) as caught:
        encode(kcql(fields), batch)
    assert "offset=41" in str(caught.value)


def test_value_fields_need_structured_values():
    with pytest.raises(PartitionerError, match="reads fields of record values"):
        encode(kcql("region"), records(), bytes_values(2))


def test_missing_value_field_is_an_error_naming_the_record():
    with pytest.raises(PartitionerError, match="offset=41"):
        encode(kcql("region"), records(), json_values([{"region": "eu"}, {"shard": 1}]))


def test_needs_fields():
    with pytest.raises(ConfigError, match="partition.field.name"):
        kcql("")
    with pytest.raises(ConfigError, match="names no field"):
        kcql("_value.")


def test_registered_and_configured_by_a_kcql_statement():
    config = SINK.parse(
        {
            "name": "n",
            KCQL_KEY: "INSERT INTO b:p SELECT * FROM t PARTITIONBY _header.country, _key "
            "STOREAS TEXT WITHPARTITIONER KeysAndValues",
        }
    )
    p = REGISTRY.resolve(config["partitioner.class"])(config)
    assert isinstance(p, KcqlPartitioner)
    assert encode(p, records()) == ["_header.country=FR/_key=k1", "_header.country=DE/_key=k2"]
    assert p.path("t", "FR") == "t/FR"  # the Confluent layout: <topic>/<directories>


def test_a_kcql_backup_keeps_the_confluent_layout_under_the_prefix(tmp_path):
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.backup.partition import PartitionBackup
    from kafka_s3.pipelines.backup.plugins import BackupPlugins

    config = SINK.parse(
        {
            "name": "n",
            "store.url": f"file://{tmp_path}",
            KCQL_KEY: (
                "INSERT INTO bucket:kcql/prefix SELECT * FROM t PARTITIONBY _header.country STOREAS TEXT "
                "WITH_FLUSH_COUNT 3"
            ),
        }
    )
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, "t", 0)
    writer.write(
        make_batch(
            {"offset": i, "topic": "t", "value": b"v%d" % i, "headers": [("country", c)]}
            for i, c in enumerate([b"FR", b"DE", b"FR"])
        )
    )
    writer.finish(3, flush_open=True)
    keys = sorted(info.key for info in store.list("kcql/prefix/t/"))
    assert keys == ["kcql/prefix/t/DE/t+0+0000000001.bin", "kcql/prefix/t/FR/t+0+0000000000.bin"]
    assert store.get(keys[1]) == b"v0\nv2\n"
    assert [i.key for i in store.list("kcql/prefix/_kafka-s3/")] == [
        "kcql/prefix/_kafka-s3/bin/t/0/" + "0" * 20 + ".chunk"
    ]
