"""KCQL (connect.s3.kcql): every clause, several statements, and errors that point at the offending token."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.config.loader import load, load_all
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.peers.lenses.config import split_statements
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY, parse

CONNECTION = {"name": "lenses-s3-sink", "aws.region": "eu-west-1"}


def sink(kcql: str, **settings):
    return SINK.parse({**CONNECTION, **{k.replace("__", "."): v for k, v in settings.items()}, KCQL_KEY: kcql})


def kcql_error(kcql: str, **settings) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        sink(kcql, **settings)
    assert caught.value.key == KCQL_KEY
    assert str(caught.value).startswith(f"{KCQL_KEY}: ")
    return caught.value


# ----------------------------------------------------------------------------------------------------- clauses
def test_insert_into_sets_bucket_prefix_and_topic():
    config = sink("INSERT INTO my-bucket.eu:path/to/prefix SELECT * FROM orders STOREAS JSON")
    assert config["s3.bucket.name"] == "my-bucket.eu"
    assert config["topics.dir"] == "path/to/prefix"
    assert config["topics"] == ["orders"]
    assert config["partitioner.class"] == "default"  # no PARTITIONBY: the Confluent layout's partition=<n>


def test_without_a_prefix_objects_go_to_the_bucket_root():
    assert sink("INSERT INTO b SELECT * FROM t STOREAS JSON")["topics.dir"] == ""


def test_topic_names_with_dashes_dots_and_back_quotes():
    assert sink("INSERT INTO b:p SELECT * FROM topic-with-headers.v2 STOREAS JSON")["topics"] == [
        "topic-with-headers.v2"
    ]
    assert sink("INSERT INTO `b`:`p` SELECT * FROM `my topic` STOREAS JSON")["topics"] == ["my topic"]


@pytest.mark.parametrize(
    "store_as, format_class",
    [
        ("AVRO", "avro"),
        ("`AVRO`", "avro"),
        ("parquet", "parquet"),
        ("Json", "json"),
        ("TEXT", "bytearray"),
        ("BYTES", "bytearray"),
        ("block_gzip", "block_gzip"),
        ("= `PARQUET`", "parquet"),
    ],
)
def test_storeas_sets_the_format(store_as, format_class):
    assert sink(f"INSERT INTO b:p SELECT * FROM t STOREAS {store_as}")["format.class"] == format_class


def test_storeas_wins_over_the_files_format_and_is_optional_when_the_file_has_one():
    assert sink("INSERT INTO b:p SELECT * FROM t STOREAS AVRO", format__class="json")["format.class"] == "avro"
    assert sink("INSERT INTO b:p SELECT * FROM t", format__class="parquet")["format.class"] == "parquet"


@pytest.mark.parametrize("clause", ["WITH_FLUSH_COUNT 5000", "WITH_FLUSH_COUNT = 5000", "with_flush_count=5000"])
def test_with_flush_count_sets_flush_size(clause):
    assert sink(f"INSERT INTO b:p SELECT * FROM t STOREAS JSON {clause}")["flush.size"] == 5000


def test_flush_size_defaults_to_the_file_then_50000():
    assert sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON", flush__size="7")["flush.size"] == 7
    assert sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON")["flush.size"] == 50000
    assert sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON WITH_FLUSH_COUNT 9", flush__size="7")["flush.size"] == 9


def test_with_flush_size_sets_rotate_size_bytes():
    assert sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON WITH_FLUSH_SIZE 1048576")["rotate.size.bytes"] == 1048576


def test_with_flush_interval_sets_a_utc_schedule_in_milliseconds():
    config = sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON WITH_FLUSH_INTERVAL = 300")
    assert config["rotate.schedule.interval.ms"] == 300_000
    assert config["timezone"] == "UTC"
    kept = sink("INSERT INTO b:p SELECT * FROM t STOREAS JSON WITH_FLUSH_INTERVAL 60", timezone="Europe/Paris")
    assert kept["timezone"] == "Europe/Paris"


def test_partitionby_uses_the_kcql_partitioner_with_values_paths_by_default():
    config = sink(
        "INSERT INTO b:p SELECT * FROM t PARTITIONBY _header.facilityCountryCode,_header.facilityNum "
        "STOREAS `TEXT` WITH_FLUSH_COUNT=100"
    )
    assert config["partitioner.class"] == "kcql"
    assert config["partition.field.name"] == ["_header.facilityCountryCode", "_header.facilityNum"]
    assert config["partition.path.style"] == "Values"


def test_partitionby_accepts_parentheses_keys_and_nested_value_fields():
    config = sink("INSERT INTO b:p SELECT * FROM t PARTITIONBY (customer.country, _key, `region`) STOREAS JSON")
    assert config["partition.field.name"] == ["customer.country", "_key", "region"]


@pytest.mark.parametrize(
    "style, expected", [("KeysAndValues", "KeysAndValues"), ("= values", "Values"), ("keysandvalues", "KeysAndValues")]
)
def test_withpartitioner_sets_the_path_style(style, expected):
    config = sink(f"INSERT INTO b:p SELECT * FROM t PARTITIONBY region STOREAS JSON WITHPARTITIONER {style}")
    assert config["partition.path.style"] == expected


def test_keywords_are_case_insensitive_and_clauses_may_come_in_any_order():
    lower = sink("insert into b:p select * from t with_flush_count 5 storeas avro partitionby a withpartitioner values")
    upper = sink("INSERT INTO b:p SELECT * FROM t PARTITIONBY a STOREAS AVRO WITHPARTITIONER Values WITH_FLUSH_COUNT 5")
    keys = ("format.class", "flush.size", "partitioner.class", "partition.field.name", "partition.path.style")
    assert [lower[k] for k in keys] == [upper[k] for k in keys]


def test_the_seed_examples_parse():
    statements = parse(
        "INSERT INTO testS3Bucket:pathToWriteTo SELECT * FROM topicA;\n"
        "INSERT INTO testS3Bucket:pathToWriteTo SELECT * FROM topicB STOREAS `AVRO`WITH_FLUSH_COUNT = 5000;\n"
        "INSERT INTO kafka-connect-aws-s3-test:headerpartitioningdem SELECT * FROM topic-with-headers "
        "PARTITIONBY _header.facilityCountryCode,_header.facilityNum STOREAS `TEXT` WITH_FLUSH_COUNT=100 "
    )
    assert [(s.bucket, s.prefix, s.topic, s.store_as, s.flush_count) for s in statements] == [
        ("testS3Bucket", "pathToWriteTo", "topicA", None, None),
        ("testS3Bucket", "pathToWriteTo", "topicB", "avro", 5000),
        ("kafka-connect-aws-s3-test", "headerpartitioningdem", "topic-with-headers", "bytearray", 100),
    ]


def test_the_seed_connector_json_loads_as_a_backup(tmp_path):
    path = tmp_path / "s3.json"
    path.write_text(
        json.dumps(
            {
                "name": "lenses-s3-sink",
                "config": {
                    "connector.class": "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector",
                    "tasks.max": "1",
                    "topics": "orders",
                    KCQL_KEY: (
                        "INSERT INTO my-bucket:my-prefix SELECT * FROM orders STOREAS `AVRO` WITH_FLUSH_COUNT = 5000"
                    ),
                    "aws.region": "eu-west-1",
                    "aws.access.key": "AKIAEXAMPLE",
                    "aws.secret.key": "secret-example",
                    "aws.auth.mode": "Credentials",
                    # (the seed's AvroConverter needs a Schema Registry; kafka-s3 takes JSON with schemas for typed
                    # formats)
                    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter.schemas.enable": "true",
                },
            }
        )
    )
    config = load(SINK, path)
    assert (config["s3.bucket.name"], config["topics.dir"], config["topics"]) == ("my-bucket", "my-prefix", ["orders"])
    # Lenses' sink class: Lenses' own Avro objects, in Lenses' layout (issue 15 item 6)
    assert (config["format.class"], config["flush.size"], config["s3.region"]) == ("lenses_avro", 5000, "eu-west-1")
    assert config["aws.access.key.id"] == "AKIAEXAMPLE"
    assert not [w for w in config.warnings if "not a known" in w]


def test_statement_settings_win_over_the_files_and_topics_regex_is_dropped():
    config = sink(
        "INSERT INTO b:p SELECT * FROM orders STOREAS JSON",
        s3__bucket__name="file-bucket",
        topics__regex="orders-.*",
        topics__dir="file-dir",
    )
    assert (config["s3.bucket.name"], config["topics.dir"], config["topics"], config["topics.regex"]) == (
        "b",
        "p",
        ["orders"],
        "",
    )


def test_parsing_a_statements_own_originals_again_gives_the_same_configuration():
    # What Spark tasks do: they re-parse config.originals.
    config = sink("INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS JSON WITH_FLUSH_INTERVAL 5")
    again = SINK.parse(config.originals)
    assert {k: again[k] for k in again} == {k: config[k] for k in config}


def test_a_restore_reads_a_statements_bucket_prefix_and_topic():
    config = SOURCE.parse({**CONNECTION, KCQL_KEY: "INSERT INTO b:p SELECT * FROM t PARTITIONBY a STOREAS TEXT"})
    assert (config["s3.bucket.name"], config["topics.dir"], config["topics"], config["format.class"]) == (
        "b",
        "p",
        ["t"],
        "bytearray",
    )


# ------------------------------------------------------------------------------------------------- statements
MULTI = """
INSERT INTO bucket-a:backups SELECT * FROM orders STOREAS AVRO WITH_FLUSH_COUNT 100;
INSERT INTO bucket-b:raw SELECT * FROM clicks PARTITIONBY _header.country STOREAS TEXT;
"""


def test_several_statements_split_into_one_configuration_each(tmp_path):
    path = tmp_path / "kcql.properties"
    path.write_text(f"name=multi\n{KCQL_KEY}={MULTI.strip().replace(chr(10), ' ')}\n")
    configs = load_all(SINK, path)
    assert [
        (c["s3.bucket.name"], c["topics.dir"], c["topics"], c["format.class"], c["flush.size"]) for c in configs
    ] == [
        ("bucket-a", "backups", ["orders"], "avro", 100),
        ("bucket-b", "raw", ["clicks"], "bytearray", 50000),
    ]
    assert configs[1]["partitioner.class"] == "kcql"
    assert configs[0][KCQL_KEY] == "INSERT INTO bucket-a:backups SELECT * FROM orders STOREAS AVRO WITH_FLUSH_COUNT 100"
    assert all(c["name"] == "multi" for c in configs)  # one consumer group: connect-multi


def test_without_kcql_a_file_is_one_configuration():
    raw = {"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}
    assert split_statements(raw) == [raw]
    assert split_statements({**raw, KCQL_KEY: "  "}) == [{**raw, KCQL_KEY: "  "}]


def test_one_configuration_cannot_hold_several_statements():
    error = kcql_error(MULTI)
    assert "2 statements" in str(error)


def test_empty_statements_between_separators_are_ignored():
    assert [s.topic for s in parse(";; INSERT INTO b:p SELECT * FROM t ;;\n; ")] == ["t"]


def test_a_topic_in_two_statements_is_refused_at_its_second_mention():
    error = kcql_error("INSERT INTO b:p SELECT * FROM t STOREAS JSON;\nINSERT INTO c:q SELECT * FROM t STOREAS AVRO")
    assert "line 2, column 31" in str(error) and "already read by the statement at line 1, column 31" in str(error)


# ----------------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kcql, problem, where",
    [
        (
            "INSERT INTO b:p SELECT * FROM t WITH_FLUSH_COUNT abc",
            "expected a positive whole number after WITH_FLUSH_COUNT, found 'abc'",
            "line 1, column 50 (character 49)",
        ),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS JSON\n  WITH_FLUSH_SIZE = -5",
            "after WITH_FLUSH_SIZE, found '-5'",
            "line 2, column 21 (character 65)",
        ),
        ("INSERT INTO b:p SELECT * FROM t WITH_FLUSH_INTERVAL 0", "positive whole number", "line 1, column 53"),
        ("INSERT b:p SELECT * FROM t", "expected INTO after INSERT, found 'b'", "line 1, column 8 (character 7)"),
        ("UPSERT INTO b:p SELECT * FROM t", "expected INSERT", "line 1, column 1 (character 0)"),
        ("INSERT INTO b:p SELECT a, b FROM t", "only SELECT * is supported, found 'a'", "line 1, column 24"),
        ("INSERT INTO b:p SELECT * t", "expected FROM after SELECT *, found 't'", "line 1, column 26"),
        (
            "INSERT INTO b:p SELECT * FROM",
            "expected a topic name after FROM, found the end of the statement",
            "line 1, column 30 (character 29)",
        ),
        ("INSERT INTO b:p SELECT * FROM t STOREAS XML", "STOREAS XML is not a format", "line 1, column 41"),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS JSON STOREAS AVRO",
            "STOREAS appears twice (first at line 1, column 33)",
            "line 1, column 46",
        ),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES(a=1)",
            "PROPERTIES key 'a' is not supported (supported: flush.count",
            "line 1, column 57",
        ),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS 'JSON'",
            "expected a storage format after STOREAS",
            "line 1, column 41",
        ),
        ("INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('x", "unclosed quote", "line 1, column 57"),
        (
            "INSERT INTO b:p SELECT * FROM b2:p2 STOREAS JSON",
            "that is a source statement",
            "line 1, column 31",
        ),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS JSON WITHPARTITIONER Values",
            "WITHPARTITIONER needs a PARTITIONBY",
            "line 1, column 46",
        ),
        (
            "INSERT INTO b:p SELECT * FROM t PARTITIONBY a WITHPARTITIONER Keys",
            "must be KeysAndValues or Values",
            "line 1, column 63",
        ),
        ("INSERT INTO b:p SELECT * FROM t PARTITIONBY (a, b STOREAS JSON", "expected ')'", "line 1, column 51"),
        (
            "INSERT INTO b:p SELECT * FROM t PARTITIONBY a, STOREAS JSON",
            "expected one of PARTITIONBY",
            "line 1, column 56",
        ),
        ("INSERT INTO `b:p SELECT * FROM t", "unclosed back-quote", "line 1, column 13 (character 12)"),
        ("INSERT INTO ${BUCKET_NAME}:p SELECT * FROM t", "unexpected character '$'", "line 1, column 13"),
        (
            "INSERT INTO b:p SELECT * FROM t STOREAS JSON PARTITIONBY _header.",
            "_header. needs a header name",
            "line 1, column 58",
        ),
        ("  ;  ", "no statement", "line 1, column 1"),
    ],
)
def test_errors_name_the_token_and_its_position(kcql, problem, where):
    message = str(kcql_error(kcql))
    assert problem in message, message
    assert where in message, message


def test_a_statement_without_storeas_needs_the_files_format():
    assert "has no STOREAS and format.class is not set" in str(kcql_error("INSERT INTO b:p SELECT * FROM t"))


def test_lenses_keys_without_kafka_s3_meaning_are_ignored_with_a_reason():
    config = sink(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON", aws__auth__mode="Credentials", aws__vhost__bucket="true"
    )
    assert any("aws.auth.mode" in w and "not supported" in w for w in config.warnings)
    assert any("aws.vhost.bucket" in w and "s3.path.style.access.enabled" in w for w in config.warnings)


# ----------------------------------------------------------------------------------------------------- CLI
def _kcql_file(tmp_path):
    path = tmp_path / "kcql.properties"
    path.write_text(f"name=multi\nbootstrap.servers=localhost:9092\n{KCQL_KEY}={MULTI.strip().replace(chr(10), ' ')}\n")
    return path


def test_cli_shows_and_validates_every_statement(tmp_path, capsys):
    from kafka_s3.cli.main import main

    path = _kcql_file(tmp_path)
    assert main(["config", "show", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "# statement 1: INSERT INTO bucket-a:backups" in out and "# statement 2: INSERT INTO bucket-b:raw" in out
    assert main(["config", "show", "--config", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["s3.bucket.name"] for s in shown] == ["bucket-a", "bucket-b"]
    assert main(["config", "validate", "--config", str(path)]) == 0
    assert "2 KCQL statements" in capsys.readouterr().out


def test_cli_backup_runs_every_statement_as_one_group(tmp_path, monkeypatch, capsys):
    from kafka_s3 import api
    from kafka_s3.cli.main import main
    from kafka_s3.pipelines.backup.cycle import BackupSummary

    seen = []

    class FakeGroup:
        def __init__(self, configs, engine=None, on_cycle=None):
            seen.append([c["topics"] for c in configs])
            self.engine = engine

        def run_once(self):
            return BackupSummary()

    monkeypatch.setattr(api, "BackupGroup", FakeGroup)
    assert main(["backup", "--config", str(_kcql_file(tmp_path)), "--once"]) == 0
    assert seen == [[["orders"], ["clicks"]]]


def test_cli_reports_kcql_errors_with_their_position(tmp_path, capsys):
    from kafka_s3.cli.main import main

    path = tmp_path / "bad.properties"
    path.write_text(f"name=n\n{KCQL_KEY}=INSERT INTO b:p SELECT * FROM t STOREAS XML\n")
    assert main(["config", "validate", "--config", str(path)]) == 2
    assert "connect.s3.kcql: STOREAS XML is not a format kafka-s3 writes" in capsys.readouterr().err


def test_cli_read_picks_the_statement_of_the_topic(tmp_path, capsys):
    from kafka_s3.cli.main import main

    path = _kcql_file(tmp_path)
    assert main(["read", "--config", str(path), "--offset", "0:0"]) == 2
    assert "choose one with --topic" in capsys.readouterr().err
    assert main(["read", "--config", str(path), "--offset", "0:0", "--topic", "nope"]) == 2
    assert "no KCQL statement of the file reads topic 'nope'" in capsys.readouterr().err
