"""Configuration: Confluent files load unchanged, unknown keys warn, invalid values name the key."""

from __future__ import annotations

import json
import textwrap

import pytest

from kafka_s3.core.config.loader import interpolate, load, read_properties_text, read_raw
from kafka_s3.core.config.model import REDACTED
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError

QUICKSTART = textwrap.dedent(
    """\
    name=s3-sink
    connector.class=io.confluent.connect.s3.S3SinkConnector
    tasks.max=1
    topics=s3_topic
    flush.size=3

    s3.bucket.name=confluent-kafka-connect-s3-testing
    s3.part.size=5242880

    storage.class=io.confluent.connect.s3.storage.S3Storage
    format.class=io.confluent.connect.s3.format.avro.AvroFormat
    schema.generator.class=io.confluent.connect.storage.hive.schema.DefaultSchemaGenerator
    partitioner.class=io.confluent.connect.storage.partitioner.DefaultPartitioner

    schema.compatibility=NONE
    """
)

BASE = {"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}


def test_confluent_quickstart_loads_with_aliases_resolved(tmp_path):
    path = tmp_path / "quickstart-s3.properties"
    path.write_text(QUICKSTART)
    config = load(SINK, path)
    assert config["format.class"] == "avro"
    assert config["partitioner.class"] == "default"
    assert config["storage.class"] == "s3"
    assert config["flush.size"] == 3 and config["s3.part.size"] == 5242880
    assert config["topics"] == ["s3_topic"]
    assert config["topics.dir"] == "topics" and config["file.delim"] == "+"
    assert any("schema.generator.class" in w for w in config.warnings)


def test_rest_json_form_is_equivalent(tmp_path):
    path = tmp_path / "s3.json"
    path.write_text(json.dumps({"name": "s3-sink", "config": {**read_properties_text(QUICKSTART), "flush.size": 3}}))
    config = load(SINK, path)
    assert config["name"] == "s3-sink" and config["flush.size"] == 3 and config["format.class"] == "avro"


def test_unknown_key_warns_once_and_names_it():
    config = SINK.parse({**BASE, "confluent.license": "", "no.such.key": "1"})
    assert sum("no.such.key" in w for w in config.warnings) == 1
    assert sum("confluent.license" in w for w in config.warnings) == 1


@pytest.mark.issue(28, item=5)
def test_a_missing_required_key_names_the_present_unknown_key_it_was_probably_meant_to_be():
    raw = {k: v for k, v in BASE.items() if k != "flush.size"}
    with pytest.raises(ConfigError, match=r"Missing required configuration \"flush.size\".*'flush.sise' is set: did"):
        SINK.parse({**raw, "flush.sise": "3"})
    with pytest.raises(ConfigError) as plain:
        SINK.parse({**raw, "unrelated.key": "3"})
    assert "did you mean" not in str(plain.value)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("flush.size", "abc", "flush.size"),
        ("flush.size", "0", "flush.size"),
        ("format.class", "com.example.Nope", "format.class"),
        ("partitioner.class", "NoSuchPartitioner", "partitioner.class"),
        ("s3.compression.type", "lzma", "s3.compression.type"),
        ("s3.part.size", "1024", "s3.part.size"),
        ("avro.codec", "lz77", "avro.codec"),
        ("store.envelope", "maybe", "store.envelope"),
        ("timezone", "Mars/Olympus", "timezone"),
    ],
)
def test_invalid_values_name_key_and_value(key, value, expected):
    with pytest.raises(ConfigError) as info:
        SINK.parse({**BASE, key: value})
    assert expected in str(info.value) and info.value.key == expected
    assert value in str(info.value) or key == "s3.part.size"


def test_required_and_exclusive_keys():
    with pytest.raises(ConfigError, match="flush.size"):
        SINK.parse({k: v for k, v in BASE.items() if k != "flush.size"})
    with pytest.raises(ConfigError, match="topics or topics.regex"):
        SINK.parse({**BASE, "topics.regex": "t.*"})
    with pytest.raises(ConfigError, match="timezone"):
        SINK.parse({**BASE, "rotate.schedule.interval.ms": "60000"})
    with pytest.raises(ConfigError, match="partition.field.name"):
        SINK.parse({**BASE, "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner"})


def test_case_insensitive_enums_canonicalised():
    config = SINK.parse({**BASE, "schema.compatibility": "backward", "s3.compression.type": "GZIP"})
    assert config["schema.compatibility"] == "BACKWARD" and config["s3.compression.type"] == "gzip"


def test_deviantart_and_lenses_aliases():
    config = SINK.parse(
        {
            **{k: v for k, v in BASE.items() if k != "s3.bucket.name"},
            "s3.bucket": "logs",
            "s3.endpoint": "http://x:1",
            "s3.prefix": "pre",
            "aws.secret.key": "shh",
        }
    )
    assert config["s3.bucket.name"] == "logs" and config["store.url"] == "http://x:1" and config["topics.dir"] == "pre"
    assert config["aws.secret.access.key"] == "shh"


def test_interpolation_env_file_directory(tmp_path):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("aws.secret=from-file\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "token").write_text("from-dir")
    raw = {
        "a": "${env:MY_VAR}",
        "b": f"${{file:{secrets}:aws.secret}}",
        "c": f"x-${{directory:{tmp_path / 'dir'}:token}}",
    }
    assert interpolate(raw, {"MY_VAR": "from-env"}) == {"a": "from-env", "b": "from-file", "c": "x-from-dir"}
    with pytest.raises(ConfigError, match="NOPE"):
        interpolate({"k": "${env:NOPE}"}, {})
    with pytest.raises(ConfigError, match="missing.key"):
        interpolate({"k": f"${{file:{secrets}:missing.key}}"}, {})


def test_secrets_are_redacted_in_rows():
    config = SINK.parse(
        {
            **BASE,
            "aws.secret.access.key": "s3cr3t-value",
            "s3.sse.customer.key": "a2V5",
            "sasl.jaas.config": "x",
            "producer.override.ssl.key.password": "pw12345",
        }
    )
    rows = {k: v for k, v, _ in config.as_rows()}
    assert rows["aws.secret.access.key"] == REDACTED and rows["s3.sse.customer.key"] == REDACTED
    assert rows["sasl.jaas.config"] == REDACTED and rows["producer.override.ssl.key.password"] == REDACTED
    assert "s3cr3t-value" in config.secret_values()
    assert all("s3cr3t-value" not in v for v in rows.values())


def test_defaults_marked_in_rows():
    rows = {k: d for k, _, d in SINK.parse(BASE).as_rows()}
    assert rows["topics.dir"] is True and rows["flush.size"] is False


def test_source_accepts_a_backup_config_quietly_and_confluent_source_keys():
    backup = SOURCE.parse({**BASE, "rotate.interval.ms": "100"})
    assert not any("rotate.interval.ms" in w for w in backup.warnings)
    source = SOURCE.parse(
        {
            "name": "s3-source",
            "tasks.max": "1",
            "connector.class": "io.confluent.connect.s3.source.S3SourceConnector",
            "s3.bucket.name": "b",
            "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
            "confluent.license": "",
            "confluent.topic.bootstrap.servers": "localhost:9092",
            "confluent.topic.replication.factor": "1",
            "transforms": "AddPrefix",
            "transforms.AddPrefix.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.AddPrefix.regex": ".*",
            "transforms.AddPrefix.replacement": "copy_of_$0",
        }
    )
    assert source["transforms"] == ["AddPrefix"] and source.extras["transforms.AddPrefix.regex"] == ".*"
    with pytest.raises(ConfigError, match="connector.class"):
        SOURCE.parse({**BASE, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector"})


def test_properties_parsing_escapes_and_continuations(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("# comment\n! also comment\nkey1 = a\\\n   b\nkey2:value2\nkey3 value3\nsep=\\\\n\nuni=\\u00e9\n")
    assert read_raw(path) == {"key1": "ab", "key2": "value2", "key3": "value3", "sep": "\\n", "uni": "é"}


TIME_BASED = {
    "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
    "partition.duration.ms": "3600000",
    "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
    "locale": "en-US",
    "timezone": "UTC",
}


@pytest.mark.issue(14, item=11)
@pytest.mark.parametrize(
    "extractor",
    [None, "Wallclock", "io.confluent.connect.storage.partitioner.TimeBasedPartitioner$WallclockTimestampExtractor"],
)
def test_wallclock_extractor_warns_that_the_backup_is_not_exactly_once(extractor):
    settings = {**BASE, **TIME_BASED, "rotate.interval.ms": "600000"}
    if extractor is not None:  # the default extractor is Wallclock, as Confluent's
        settings["timestamp.extractor"] = extractor
    warnings = [w for w in SINK.parse(settings).warnings if "Wallclock" in w]
    assert len(warnings) == 1
    assert "not exactly-once" in warnings[0] and "rotate.interval.ms" in warnings[0]
    assert "timestamp.extractor=Record" in warnings[0]


@pytest.mark.issue(14, item=11)
def test_record_time_and_default_partitioning_do_not_warn():
    for settings in ({**BASE, **TIME_BASED, "timestamp.extractor": "Record"}, {**BASE}):
        assert not [w for w in SINK.parse(settings).warnings if "Wallclock" in w]


@pytest.mark.issue(13, item=3)
def test_inline_private_keys_are_secret():
    from kafka_s3.core.config.model import is_secret_key

    for key in ("ssl.keystore.key", "consumer.override.ssl.keystore.key", "ssl.key.pem", "producer.ssl.key.pem"):
        assert is_secret_key(key), key
    assert not is_secret_key("ssl.keystore.certificate.chain") and not is_secret_key("ssl.truststore.location")


def _sink(**settings: str):
    raw = {"name": "b", "topics": "t", "s3.bucket.name": "bucket", "flush.size": "3", "format.class": "json"}
    return SINK.parse({**raw, **settings})


@pytest.mark.issue(27)
def test_a_parsed_configuration_travels_as_its_values_and_the_name_of_its_definition():
    import pickle

    config = _sink(**{"format.class": "json", "sasl.password": "s3cret"})
    data = pickle.dumps(config)
    back = pickle.loads(data)
    assert back.definition is SINK  # found by name: a task never holds, nor parses with, a copy of the definition
    assert dict(back) == dict(config) and back.originals == config.originals
    assert back.fingerprint == config.fingerprint
    assert len(data) < 8_000  # the definition's hundreds of properties and their docs do not travel
    assert b"Unique name of the backup" not in data


@pytest.mark.issue(27)
def test_a_parsed_configuration_is_frozen_and_replace_makes_a_changed_copy():
    config = _sink()
    with pytest.raises(AttributeError, match="frozen"):
        config.originals = {}  # type: ignore[misc]
    changed = config.replace(flush__size=5)
    assert (config["flush.size"], changed["flush.size"]) == (3, 5)
    assert changed.fingerprint != config.fingerprint
    assert _sink().fingerprint == config.fingerprint
