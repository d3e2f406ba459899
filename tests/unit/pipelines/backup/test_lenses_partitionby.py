"""Issue 15 item 6 (B1): a Lenses sink statement with PARTITIONBY backs up into Lenses' partitioned layout.

What Lenses writes, from its source (LS = lensesio/stream-reactor ``kafka-connect-cloud-common``, ``sink/``):

- ``naming/CloudKeyNamer.finalFilename``: ``<prefix>/<partition prefix>/<fileNamer.fileName>``; the partition prefix
  (``buildPartitionPrefix``) joins the PARTITIONBY fields with ``/``, each ``<name>=<value>`` when the display is
  ``KeysAndValues``, the value alone when it is ``Values``;
- ``naming/FileNamer.TopicPartitionOffsetFileNamer.fileName``: ``<topic>(<partition>_<offset %012d>).<ext>``
  (partition unpadded, offset padded to 12 digits by default: ``config/padding/PaddingService``), the offset being the
  object's last (``writer/Writer.commit``);
- ``config/PartitionSelection.apply``: with PARTITIONBY the display defaults to ``KeysAndValues``;
  ``config/PartitionDisplay.fromProps``: ``'partition.include.keys'=false`` makes it ``Values`` (the property wins
  over WITHPARTITIONER);
- ``config/PartitionField`` / ``PartitionSpecifier``: ``_topic`` → ``topic``, ``_partition`` → ``partition``,
  ``_key`` → ``key``, ``_key.f``/``_header.h``/``_value.f``/``f`` → ``f``/``h``/``f``/``f``, ``_date.<fmt>`` →
  ``date`` (names from ``PartitionNamePath.toString``: the path joined with ``.``);
- ``naming/CloudKeyNamer.getFieldStringValue``: ``/`` and ``\\`` in a value become ``-``; a field missing from a
  non-null value becomes ``[missing]`` (``getPartitionValueFromSinkData``); a null value, key or header is an error
  (``partitionValueOrError``, ``processPartitionValues``).
"""

from __future__ import annotations

import gzip
import json

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError, PartitionerError
from kafka_s3.core.peers.lenses.layout import LensesLayout
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
VALUES = [
    {"region": "eu/west", "shop": {"id": 1}},
    {"region": "us", "shop": {"id": 2}},
    {"region": "eu/west", "shop": {}},  # no shop.id: [missing]
    {"region": "us", "shop": {"id": 2}},
]


def _config(tmp_path, statement: str):
    return SINK.parse(
        {
            "name": "lenses-sink",
            "connector.class": LENSES_SINK,
            "connect.s3.kcql": statement,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "store.url": tmp_path.as_uri(),
        }
    )


def _backup(tmp_path, statement: str, records=None):
    config = _config(tmp_path, statement)
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    plugins = BackupPlugins.from_config(config)
    writer = PartitionBackup(plugins, store, "t", 3)
    batch = records if records is not None else _records()
    writer.write(batch)
    writer.finish(batch.num_rows, flush_open=True)
    return config, plugins, {i.key: store.get(i.key) for i in store.list("") if "/_kafka-s3/" not in i.key}


def _records(values=VALUES):
    return make_batch(
        [
            {
                "topic": "t",
                "partition": 3,
                "offset": o,
                "key": b"k/%d" % (o % 2),
                "value": json.dumps(v).encode(),
                "timestamp": 1577849400000 + o,  # 2020-01-01T03:30:00Z
                "headers": [("h", b"x%d" % (o % 2))],
            }
            for o, v in enumerate(values)
        ]
    )


def test_partitionby_writes_lenses_partitioned_names_keys_and_values_by_default(tmp_path):
    config, plugins, objects = _backup(
        tmp_path, "INSERT INTO b:lenses/in SELECT * FROM t PARTITIONBY region, _key STOREAS `JSON`"
    )
    assert not [w for w in config.warnings if "Lenses' layout" in w]
    assert isinstance(plugins.layout, LensesLayout)
    data = {k: v for k, v in objects.items() if not k.startswith(".indexes/")}
    assert sorted(data) == [
        "lenses/in/region=eu-west/key=k-0/t(3_000000000002).json",
        "lenses/in/region=us/key=k-1/t(3_000000000003).json",
    ]
    # the line bytes (Lenses' Jackson text of a HashMap) are the JSON writer's (tested in core/formats/test_lenses_json)
    lines = data["lenses/in/region=us/key=k-1/t(3_000000000003).json"].splitlines()
    assert [json.loads(line) for line in lines] == [VALUES[1], VALUES[3]]
    lock = json.loads(objects[".indexes/lenses-sink/.locks/t/3.lock"])
    assert lock["committedOffset"] == 3


def test_partitionby_partition_include_keys_false_writes_values_only(tmp_path):
    _, _, objects = _backup(
        tmp_path,
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY region, _key STOREAS `JSON` "
        "PROPERTIES('partition.include.keys'=false)",
    )
    assert sorted(k for k in objects if not k.startswith(".indexes/")) == [
        "p/eu-west/k-0/t(3_000000000002).json",
        "p/us/k-1/t(3_000000000003).json",
    ]


def test_partitionby_field_names_as_lenses_names_them(tmp_path):
    _, _, objects = _backup(
        tmp_path,
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY _topic, _partition, _header.h, _value.shop.id, "
        "_date.yyyy-MM-dd-HH STOREAS `JSON` PROPERTIES('store.envelope'=true)",
    )
    assert sorted(k for k in objects if not k.startswith(".indexes/")) == [
        "p/topic=t/partition=3/h=x0/shop.id=1/date=2020-01-01-03/t(3_000000000000).json",
        "p/topic=t/partition=3/h=x0/shop.id=[missing]/date=2020-01-01-03/t(3_000000000002).json",
        "p/topic=t/partition=3/h=x1/shop.id=2/date=2020-01-01-03/t(3_000000000003).json",
    ]


def test_partitionby_a_tombstone_goes_to_the_tombstone_directory(tmp_path):
    """Lenses' sink fails on a null value partitioned by a value field (``partitionValueOrError``: "Value is null.");
    kafka-s3 keeps it, as for every partitioner reading values, under ``tombstone.encoded.partition``."""
    records = make_batch([{"topic": "t", "partition": 3, "offset": 0, "key": b"k", "value": None}])
    _, _, objects = _backup(
        tmp_path,
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY region STOREAS `JSON` PROPERTIES('store.envelope'=true)",
        records,
    )
    assert sorted(k for k in objects if not k.startswith(".indexes/")) == ["p/tombstone/t(3_000000000000).json"]


def test_partitionby_a_null_key_or_missing_header_cannot_be_placed(tmp_path):
    records = make_batch([{"topic": "t", "partition": 3, "offset": 0, "key": None, "value": b"{}"}])
    with pytest.raises(PartitionerError, match="_key"):
        _backup(tmp_path, "INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS `JSON`", records)
    with pytest.raises(PartitionerError, match="header 'h'"):
        _backup(
            tmp_path,
            "INSERT INTO b:p SELECT * FROM t PARTITIONBY _header.h STOREAS `JSON`",
            make_batch([{"topic": "t", "partition": 3, "offset": 0, "key": b"k", "value": b"{}"}]),
        )


def test_partitionby_date_patterns_lenses_prints_otherwise_are_refused(tmp_path):
    """Week fields follow the JVM locale's week rules (``DateTimeFormatter`` ``w``): refused by name
    (:mod:`kafka_s3.core.java_time`; what it prints is checked against the JVM in tests/unit/core/test_java_time.py)."""
    with pytest.raises(ConfigError, match="connect.s3.kcql.*'w'"):
        _backup(tmp_path, "INSERT INTO b:p SELECT * FROM t PARTITIONBY _date.ww STOREAS `JSON`")


def test_partitionby_date_with_day_names_and_fractions(tmp_path):
    _, _, objects = _backup(
        tmp_path,
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY _date.EEE_hha STOREAS `JSON` PROPERTIES('store.envelope'=true)",
    )
    assert sorted({k.split("/")[1] for k in objects if not k.startswith(".indexes/")}) == ["date=Wed_03AM"]


def test_gzip_json_objects_are_named_gz(tmp_path):
    """LS ``sink/naming/FileExtensionNamer.fileExtension``: JSON with GZIP takes the codec's extension, ``gz``."""
    config = SINK.parse(
        {
            "name": "lenses-sink",
            "connector.class": LENSES_SINK,
            "connect.s3.kcql": "INSERT INTO b:p SELECT * FROM t PARTITIONBY region STOREAS `JSON`",
            "connect.s3.compression.codec": "GZIP",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "store.url": tmp_path.as_uri(),
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, "t", 3)
    writer.write(_records())
    writer.finish(4, flush_open=True)
    data = {i.key: store.get(i.key) for i in store.list("p/") if "/_kafka-s3/" not in i.key}
    assert sorted(data) == ["p/region=eu-west/t(3_000000000002).gz", "p/region=us/t(3_000000000003).gz"]
    lines = gzip.decompress(data["p/region=us/t(3_000000000003).gz"]).splitlines()
    assert [json.loads(line) for line in lines] == [VALUES[1], VALUES[3]]


def _plain(tmp_path, properties: str, partition_by: str = ""):
    statement = f"INSERT INTO b:p SELECT * FROM t {partition_by} STOREAS `JSON` PROPERTIES({properties})"
    _, _, objects = _backup(tmp_path, statement)
    return sorted(k for k in objects if not k.startswith(".indexes/"))


@pytest.mark.parametrize(
    ("properties", "partition_by", "expected"),
    [
        # LS config/padding/PaddingService.fromDefaults: padding.length.* replaces the default {offset: 12} whole
        ("'padding.length.partition'=4", "", ["p/t/0003/3_1577849400000_1577849400003.json"]),
        (
            "'padding.length.partition'=4, 'padding.length.offset'=6",
            "",
            ["p/t/0003/000003_1577849400000_1577849400003.json"],
        ),
        ("'padding.type'=NoOp", "", ["p/t/3/3_1577849400000_1577849400003.json"]),
        ("'padding.char'=0, 'padding.type'=LeftPad", "", ["p/t/3/000000000003_1577849400000_1577849400003.json"]),
        # FileNamer.TopicPartitionOffsetFileNamer pads the partition too; CloudKeyNamer pads the _partition value
        (
            "'padding.length.partition'=3, 'padding.length.offset'=5",
            "PARTITIONBY _partition",
            ["p/partition=003/t(003_00003).json"],
        ),
    ],
)
def test_padding_properties_as_lenses_pads_names(tmp_path, properties, partition_by, expected):
    assert _plain(tmp_path, properties, partition_by) == expected


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ("'padding.type'=RightPad", "padding.type"),
        ("'padding.char'=x", "padding.char"),
        ("'padding.length.offset'=abc", "padding.length.offset"),
    ],
)
def test_padding_kafka_s3_cannot_read_back_is_refused_by_name(tmp_path, properties, named):
    with pytest.raises(ConfigError, match=named):
        _plain(tmp_path, properties)


def test_partitionby_date_as_lenses_own_test_names_it(tmp_path):
    """LS ``S3SinkTaskTest`` "partition by date": ``PARTITIONBY _date.uuuu,_date.LL,_date.dd PROPERTIES('flush.count'=1,
    'padding.length.partition'='12', 'padding.length.offset'='12', 'partition.include.keys'=false)``, records at 06:00
    UTC, gives ``streamReactorBackups/2010/04/02/myTopic(000000000001_000000000000).json`` (there for partition 1, here
    3). A ``/`` a date pattern
    prints stays a ``/`` (LS ``CloudKeyNamer.processPartitionValues`` formats the date and replaces ``/`` only in
    header, key and value fields: ``getFieldStringValue``)."""
    six = 1270188000000  # 2010-04-02T06:00:00Z
    records = make_batch(
        [
            {"topic": "t", "partition": 3, "offset": o, "key": b"k", "value": b"{}", "timestamp": ts}
            for o, ts in enumerate((six, six, 1340863200000))  # 2012-06-28T06:00:00Z
        ]
    )
    properties = (
        "PROPERTIES('flush.count'=1, 'padding.length.partition'='12', 'padding.length.offset'='12', "
        "'partition.include.keys'=false)"
    )
    _, _, objects = _backup(
        tmp_path,
        f"INSERT INTO b:streamReactorBackups SELECT * FROM t PARTITIONBY _date.uuuu,_date.LL,_date.dd {properties}",
        records,
    )
    assert sorted(k for k in objects if not k.startswith(".indexes/")) == [
        "streamReactorBackups/2010/04/02/t(000000000003_000000000000).json",
        "streamReactorBackups/2010/04/02/t(000000000003_000000000001).json",
        "streamReactorBackups/2012/06/28/t(000000000003_000000000002).json",
    ]
    _, _, objects = _backup(
        tmp_path / "slash", f"INSERT INTO b:p SELECT * FROM t PARTITIONBY _date.uuuu/LL {properties}", records
    )
    assert (
        sorted(k for k in objects if not k.startswith(".indexes/"))[0] == "p/2010/04/t(000000000003_000000000000).json"
    )
