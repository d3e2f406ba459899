"""Issue 15 item 6: a Lenses S3 *sink* configuration (``connector.class`` of LS ``S3SinkConnector``,
``connect.s3.kcql=INSERT INTO bucket:prefix SELECT * FROM topic STOREAS `JSON` PROPERTIES(...)``) parsed into a backup
that writes Lenses' layout; what cannot be written that way is named (an error, or a warning and Confluent's layout).

Lenses' PROPERTIES keys are LS ``config/DataStorageSettings`` (``store.envelope``, ``store.envelope.fields.*``, default
true) and ``sink/config/FlushSettings`` (``flush.count``/``flush.size``/``flush.interval``; defaults 50000 records).
"""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.peers.lenses.policy import lenses_layout_blockers
from kafka_s3.pipelines.backup.plugins import BackupPlugins

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"


STRING = {"value__converter": "org.apache.kafka.connect.storage.StringConverter"}


def lenses(kcql: str, **settings: str):
    raw = {"name": "lenses-sink", "connector.class": LENSES_SINK, KCQL_KEY: kcql}
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return SINK.parse(raw)


def test_lenses_sink_json_statement_becomes_a_lenses_layout_backup():
    config = lenses(
        "INSERT INTO my-bucket:my/prefix SELECT * FROM orders STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true, 'flush.count'=2, 'flush.size'=1000000, 'flush.interval'=30)"
    )
    assert (config["s3.bucket.name"], config["topics.dir"], config["topics"]) == ("my-bucket", "my/prefix", ["orders"])
    assert config["format.class"] == "lenses_json"
    assert config["store.envelope"] is True
    assert (config["flush.size"], config["rotate.size.bytes"]) == (2, 1000000)
    assert config["rotate.schedule.interval.ms"] == 30000
    assert lenses_layout_blockers(config) == []
    assert not [w for w in config.warnings if "Lenses" in w]


def test_lenses_sink_defaults_plain_json_and_50000_records():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON", value__converter="org.apache.kafka.connect.json.JsonConverter"
    )
    assert (config["format.class"], config["store.envelope"], config["flush.size"]) == ("lenses_json", False, 50000)
    assert lenses_layout_blockers(config) == []


def test_envelope_field_flags_true_are_accepted_false_is_refused_by_name():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('store.envelope'=true, "
        "'store.envelope.fields.key'=true, 'store.envelope.fields.value'=true, "
        "'store.envelope.fields.headers'=true, 'store.envelope.fields.metadata'=true)"
    )
    assert config["store.envelope"] is True
    with pytest.raises(ConfigError) as caught:
        lenses("INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('store.envelope.fields.headers'=false)")
    assert caught.value.key == KCQL_KEY
    assert "'store.envelope.fields.headers'" in str(caught.value) and "line 1" in str(caught.value)


@pytest.mark.parametrize("key", ["key.suffix", "partition.search.continuous"])
def test_unsupported_lenses_properties_are_refused_by_name(key):
    with pytest.raises(ConfigError) as caught:
        lenses(f"INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('{key}'=3)")
    assert caught.value.key == KCQL_KEY
    assert f"PROPERTIES key '{key}' is not supported" in str(caught.value)
    assert "store.envelope" in str(caught.value)  # the supported keys are listed


@pytest.mark.parametrize(
    ("kcql", "named"),
    [
        ("INSERT INTO b:p SELECT * FROM t STOREAS `block_gzip`", "STOREAS BLOCK_GZIP"),
    ],
)
def test_what_lenses_layout_cannot_hold_falls_back_to_confluents_with_a_warning(kcql, named):
    config = lenses(kcql)
    blockers = lenses_layout_blockers(config)
    assert blockers and named in blockers[0]
    warning = next(w for w in config.warnings if "Lenses' layout" in w)
    assert named in warning and "Confluent's layout" in warning
    assert config["format.class"] != "lenses_json"


def test_partitionby_is_written_in_lenses_layout_and_partition_include_keys_is_a_boolean():
    """PARTITIONBY no longer falls back (LS ``config/PartitionDisplay.fromProps``: 'partition.include.keys' is read as
    a boolean and wins over WITHPARTITIONER; ``PartitionSelection.apply``: KeysAndValues by default)."""
    config = lenses("INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS JSON WITHPARTITIONER Values", **STRING)
    assert lenses_layout_blockers(config) == []
    assert config["partition.path.style"] == "Values"
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS JSON WITHPARTITIONER Values "
        "PROPERTIES('partition.include.keys'=true)",
        **STRING,
    )
    assert config["partition.path.style"] == "KeysAndValues"
    with pytest.raises(ConfigError) as caught:
        lenses(
            "INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS JSON PROPERTIES('partition.include.keys'=3)",
            **STRING,
        )
    assert caught.value.key == KCQL_KEY and "'partition.include.keys' must be true or false" in str(caught.value)


def test_a_fallback_to_confluents_layout_keeps_kcql_directories():
    """A statement Lenses' layout cannot hold (a kafka-s3 format, Block-GZIP) keeps the directories kafka-s3 wrote for
    it before: KCQL's Values by default, fields named as written."""
    config = lenses("INSERT INTO b:p SELECT * FROM t PARTITIONBY _header.region STOREAS `block_gzip`")
    assert lenses_layout_blockers(config) == ["STOREAS BLOCK_GZIP"]
    assert config["partition.path.style"] == "Values"
    partitioner = BackupPlugins.from_config(config).partitioner
    assert not partitioner.lenses  # type: ignore[attr-defined]


def test_csv_is_written_in_lenses_layout_too():
    config = lenses("INSERT INTO b:p SELECT * FROM t STOREAS CSV_WITHHEADERS")
    assert config["format.class"] == "csv_withheaders"
    assert lenses_layout_blockers(config) == []


def test_kcql_without_lenses_connector_class_keeps_confluents_layout():
    config = SINK.parse({"name": "n", KCQL_KEY: "INSERT INTO b:p SELECT * FROM t STOREAS JSON"})
    assert config["format.class"] == "json"
    assert lenses_layout_blockers(config) == ["connector.class is not Lenses' S3 sink"]


def test_plain_lenses_json_of_byte_array_values_is_refused_when_configured():
    """Lenses cannot write a byte[] value as plain JSON (LS ToJsonDataConverter: 'Cannot currently write byte array
    as json'): the configuration says so before any record is read, naming value.converter."""
    with pytest.raises(ConfigError) as caught:
        lenses("INSERT INTO b:p SELECT * FROM t STOREAS JSON")  # value.converter defaults to ByteArrayConverter
    assert caught.value.key == "value.converter"
    assert "store.envelope" in str(caught.value)
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON",
        value__converter="org.apache.kafka.connect.storage.StringConverter",
    )
    assert config["format.class"] == "lenses_json"
    assert lenses("INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('store.envelope'=true)")["store.envelope"]


def test_a_lenses_statement_without_storeas_writes_json_as_lenses_does():
    """LS ``config/FormatSelection.fromKcql``: no STOREAS is ``JsonFormatSelection``."""
    config = lenses("INSERT INTO b:p SELECT * FROM t", **STRING)
    assert config["format.class"] == "lenses_json"
    assert lenses_layout_blockers(config) == []
