"""Issue 15 items 6/7: Lenses sink and source statements with ``STOREAS TEXT`` and ``STOREAS BYTES`` are written and
read in Lenses' own layout and bytes (no longer ByteArray in Confluent's layout with a warning).

Facts (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common``):

- ``config/FormatSelection.fromString``: TEXT → ``TextFormatSelection`` (extension ``text``), BYTES →
  ``BytesFormatSelection`` (extension ``bytes``); both ``supportsEnvelope = false`` and UNCOMPRESSED only;
- ``sink/config/CloudSinkBucketOptions.validateEnvelopeAndFormat``: "Envelope is not supported for format TEXT";
- ``sink/config/CloudSinkBucketOptions.validateCommitPolicyForBytesFormat``: BYTES needs the commit policy to hold
  ``Count(1)`` ("flush.count > 1 is not allowed for BYTES");
- ``formats/writer/TextFormatWriter`` fails on non-primitive values (byte[] included), ``BytesFormatWriter`` on
  anything but byte[] ("Non-binary content received").
"""

from __future__ import annotations

import io

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.peers.lenses.policy import lenses_layout_blockers
from kafka_s3.pipelines.backup.plugins import BackupPlugins

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONNECTION = {"name": "n", "s3.region": "us-east-1"}


def lenses(kcql: str, **settings: str):
    raw = {"name": "lenses-sink", "connector.class": LENSES_SINK, KCQL_KEY: kcql}
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return SINK.parse(raw)


def test_lenses_text_statement_writes_lenses_layout_without_a_warning():
    config = lenses("INSERT INTO b:p SELECT * FROM t STOREAS TEXT", value__converter=STRING)
    assert config["format.class"] == "lenses_text"
    assert lenses_layout_blockers(config) == []
    assert not [w for w in config.warnings if "Lenses" in w]
    plugins = BackupPlugins.from_config(config)
    assert type(plugins.layout).__name__ == "LensesLayout"
    assert plugins.value_format.extension == ".text"  # LS TextFormatSelection.extension


def test_lenses_text_partitionby_names_keys_and_values_as_lenses_does():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY _header.region STOREAS `TEXT`", value__converter=STRING
    )
    assert lenses_layout_blockers(config) == []
    assert config["partition.path.style"] == "KeysAndValues"
    assert BackupPlugins.from_config(config).partitioner.lenses  # type: ignore[attr-defined]


def test_lenses_bytes_needs_flush_count_one_as_lenses_does():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS BYTES PROPERTIES('flush.count'=1)", value__converter=BYTE_ARRAY
    )
    assert (config["format.class"], config["flush.size"]) == ("lenses_bytes", 1)
    assert lenses_layout_blockers(config) == []
    assert BackupPlugins.from_config(config).value_format.extension == ".bytes"  # LS BytesFormatSelection
    for kcql in (
        "INSERT INTO b:p SELECT * FROM t STOREAS BYTES",
        "INSERT INTO b:p SELECT * FROM t STOREAS BYTES PROPERTIES('flush.count'=2)",
    ):
        with pytest.raises(ConfigError) as caught:
            lenses(kcql, value__converter=BYTE_ARRAY)
        assert caught.value.key == KCQL_KEY
        assert "'flush.count'=1" in str(caught.value) and "'t'" in str(caught.value)


@pytest.mark.parametrize("store_as", ["TEXT", "BYTES"])
def test_lenses_text_bytes_refuse_the_envelope_and_compression(store_as):
    flush = "'flush.count'=1, " if store_as == "BYTES" else ""
    with pytest.raises(ConfigError) as caught:
        BackupPlugins.from_config(
            lenses(f"INSERT INTO b:p SELECT * FROM t STOREAS {store_as} PROPERTIES({flush}'store.envelope'=true)")
        )
    assert caught.value.key == "store.envelope" and f"STOREAS {store_as}" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        BackupPlugins.from_config(
            lenses(
                f"INSERT INTO b:p SELECT * FROM t STOREAS {store_as}"
                + (" PROPERTIES('flush.count'=1)" if flush else ""),
                connect__s3__compression__codec="GZIP",
            )
        )
    assert caught.value.key == "connect.s3.compression.codec"


@pytest.mark.parametrize(
    ("store_as", "converter", "named"),
    [("TEXT", BYTE_ARRAY, "Text format is only for output of kafka string values"), ("BYTES", STRING, "Non-binary")],
)
def test_lenses_text_bytes_refuse_the_converter_lenses_fails_on(store_as, converter, named):
    flush = " PROPERTIES('flush.count'=1)" if store_as == "BYTES" else ""
    config = lenses(f"INSERT INTO b:p SELECT * FROM t STOREAS {store_as}{flush}", value__converter=converter)
    plugins = BackupPlugins.from_config(config)
    with pytest.raises(ConfigError) as caught:
        plugins.value_format.writer(io.BytesIO(), FileContext("t", 0, 0))
    assert caught.value.key == "value.converter" and named in str(caught.value)


def test_without_lenses_sink_class_text_and_bytes_stay_bytearray():
    raw = {"name": "n", KCQL_KEY: "INSERT INTO b:p SELECT * FROM t STOREAS BYTES"}
    assert SINK.parse(raw)["format.class"] == "bytearray"


@pytest.mark.parametrize(("store_as", "format_class"), [("TEXT", "lenses_text"), ("`BYTES`", "lenses_bytes")])
def test_lenses_source_text_bytes_read_lenses_objects(store_as, format_class):
    raw = {**CONNECTION, "connector.class": LENSES_SOURCE}
    config = SOURCE.parse({**raw, KCQL_KEY: f"INSERT INTO target SELECT * FROM b:in STOREAS {store_as}"})
    assert (config["s3.bucket.name"], config["topics.dir"], config["format.class"]) == ("b", "in", format_class)
    assert config["store.envelope"] is False
    with pytest.raises(ConfigError) as caught:
        SOURCE.parse(
            {
                **raw,
                KCQL_KEY: f"INSERT INTO target SELECT * FROM b:in STOREAS {store_as}",
                "connect.s3.compression.codec": "GZIP",
            }
        )
    assert caught.value.key == "connect.s3.compression.codec"
