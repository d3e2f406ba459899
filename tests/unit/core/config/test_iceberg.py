"""Apache Iceberg's sink configuration: accepted as it is, routed by topic, its catalog translated for pyiceberg, what
kafka-s3 does not do refused by name, its secrets hidden."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.iceberg import catalog_properties, iceberg_sink, split_partition_by
from kafka_s3.core.config.model import REDACTED
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError

pytestmark = pytest.mark.issue(31, 1)

ICEBERG = {
    "name": "orders-lake",
    "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
    "topics": "orders",
    "iceberg.tables": "kafka.orders",
    "iceberg.catalog.type": "sql",
    "iceberg.catalog.warehouse": "s3://lake/warehouse",
}
ROUTED = {
    **ICEBERG,
    "topics": "orders,payments,payouts",
    "iceberg.tables": "kafka.orders,kafka.payments",
    "iceberg.tables.route-field": "topic",
    "iceberg.table.kafka.orders.route-regex": "orders",
    "iceberg.table.kafka.payments.route-regex": "pay.*",
}


def parse(settings: dict[str, str]):
    return SINK.parse({**ICEBERG, **settings})


def error_of(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        SINK.parse(settings)
    return caught.value


def test_an_iceberg_sink_file_loads_without_the_s3_sinks_required_keys():
    config = SINK.parse(ICEBERG)
    assert config["format.class"] == "parquet" and config["store.envelope"] is True
    assert config["s3.bucket.name"] == "lake" and config["topics.dir"] == "warehouse"
    assert config["cycle.interval.ms"] == 300_000  # the Java sink's commit interval
    assert config.warnings == []


def test_the_commit_interval_is_the_cycles_and_the_files_own_keys_win():
    config = parse({"iceberg.control.commit.interval-ms": "60000"})
    assert config["cycle.interval.ms"] == 60_000
    config = parse({"cycle.interval.ms": "5000", "flush.size": "500", "s3.bucket.name": "other", "topics.dir": "x"})
    assert config["cycle.interval.ms"] == 5000 and config["flush.size"] == 500
    assert config["s3.bucket.name"] == "other" and config["topics.dir"] == "x"


@pytest.mark.parametrize(("key", "value"), [("format.class", "avro"), ("store.envelope", "false")])
def test_a_table_of_other_than_whole_records_in_parquet_is_refused_naming_the_key(key, value):
    assert error_of({**ICEBERG, key: value}).key == key


def test_tabulars_connector_class_is_accepted_too():
    config = SINK.parse({**ICEBERG, "connector.class": "io.tabular.iceberg.connect.IcebergSinkConnector"})
    sink = iceberg_sink(config)
    assert sink is not None and sink.tables == ("kafka.orders",)


def test_a_restore_takes_the_same_file():
    config = SOURCE.parse(ICEBERG)
    assert config["s3.bucket.name"] == "lake"


def test_a_confluent_file_has_no_iceberg_side_and_warns_of_iceberg_keys():
    config = SINK.parse(
        {"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}
        | {"iceberg.tables": "kafka.t"}
    )
    assert iceberg_sink(config) is None
    assert any("iceberg.tables" in warning and "ignored" in warning for warning in config.warnings)


def test_every_table_takes_every_record_without_a_route_field():
    sink = iceberg_sink(parse({"iceberg.tables": "kafka.a,kafka.b", "topics": "x,y"}))
    assert sink is not None
    assert sink.tables_for("x") == ("kafka.a", "kafka.b") and sink.tables_for("y") == ("kafka.a", "kafka.b")


def test_route_field_topic_sends_each_topic_to_the_tables_whose_regex_matches_it_whole():
    sink = iceberg_sink(SINK.parse(ROUTED))
    assert sink is not None
    assert sink.tables_for("orders") == ("kafka.orders",)
    assert sink.tables_for("payments") == ("kafka.payments",) and sink.tables_for("payouts") == ("kafka.payments",)
    assert sink.tables_for("orders-eu") == ()  # a full match, as Java's matcher.matches()


def test_table_names_holding_dots_find_their_own_settings():
    sink = iceberg_sink(
        SINK.parse(
            {
                **ICEBERG,
                "topics": "a,b",
                "iceberg.tables": "db.a,db.a.b",
                "iceberg.tables.route-field": "topic",
                "iceberg.table.db.a.route-regex": "a",
                "iceberg.table.db.a.b.route-regex": "b",
            }
        )
    )
    assert sink is not None and sink.tables_for("a") == ("db.a",) and sink.tables_for("b") == ("db.a.b",)


def test_a_topic_no_table_takes_is_an_error_naming_it():
    error = error_of({**ROUTED, "topics": "orders,refunds"})
    assert "'refunds'" in str(error) and error.key == "iceberg.tables.route-field"


def test_a_route_field_other_than_topic_is_refused_naming_it():
    error = error_of({**ROUTED, "iceberg.tables.route-field": "type"})
    assert "iceberg.tables.route-field=type" in str(error) and error.key == "iceberg.tables.route-field"


def test_a_routed_table_without_its_route_regex_is_an_error_naming_the_missing_key():
    settings = {k: v for k, v in ROUTED.items() if k != "iceberg.table.kafka.payments.route-regex"}
    settings["topics"] = "orders"
    assert error_of(settings).key == "iceberg.table.kafka.payments.route-regex"


def test_a_route_regex_without_route_field_warns_it_has_no_effect():
    config = parse({"iceberg.table.kafka.orders.route-regex": "orders"})
    assert any("no effect" in warning for warning in config.warnings)


def test_an_invalid_route_regex_is_an_error_naming_its_key():
    error = error_of({**ROUTED, "iceberg.table.kafka.orders.route-regex": "orders("})
    assert error.key == "iceberg.table.kafka.orders.route-regex" and "regular expression" in str(error)


def test_a_setting_of_a_table_not_listed_is_an_error_naming_the_key():
    error = error_of({**ICEBERG, "iceberg.table.kafka.refunds.partition-by": "partition"})
    assert error.key == "iceberg.table.kafka.refunds.partition-by" and "not in iceberg.tables" in str(error)


def test_a_table_setting_kafka_s3_does_not_take_is_an_error_naming_the_key():
    error = error_of({**ICEBERG, "iceberg.table.kafka.orders.sort-by": "offset"})
    assert error.key == "iceberg.table.kafka.orders.sort-by"


@pytest.mark.parametrize("tables", ["", "orders", "kafka..orders"])
def test_tables_must_be_named_namespace_dot_table(tables):
    assert error_of({**ICEBERG, "iceberg.tables": tables}).key == "iceberg.tables"


def test_partition_by_applies_to_every_table_unless_the_table_says_otherwise():
    sink = iceberg_sink(
        parse(
            {
                "iceberg.tables": "kafka.a,kafka.b",
                "iceberg.tables.default-partition-by": "hour(timestamp), partition",
                "iceberg.table.kafka.b.partition-by": "day(timestamp),topic",
            }
        )
    )
    assert sink is not None
    assert sink.partition_by == {"kafka.a": ("hour(timestamp)", "partition"), "kafka.b": ("day(timestamp)", "topic")}


def test_partition_by_splits_at_commas_outside_parentheses():
    assert split_partition_by("bucket(key, 16), truncate(topic,4),day(timestamp)") == [
        "bucket(key, 16)",
        "truncate(topic,4)",
        "day(timestamp)",
    ]
    assert split_partition_by("") == []


@pytest.mark.parametrize(
    "terms",
    ["minute(timestamp)", "bucket(key, 16)", "truncate(topic, 4)", "hour(partition)", "customer_id", "headers"],
)
def test_a_partition_field_a_backups_table_cannot_take_is_an_error_naming_the_key(terms):
    error = error_of({**ICEBERG, "iceberg.tables.default-partition-by": terms})
    assert error.key == "iceberg.tables.default-partition-by"
    error = error_of({**ICEBERG, "iceberg.table.kafka.orders.partition-by": terms})
    assert error.key == "iceberg.table.kafka.orders.partition-by"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("iceberg.tables.upsert-mode-enabled", "true"),
        ("iceberg.tables.cdc-field", "_cdc.op"),
        ("iceberg.tables.default-id-columns", "id"),
        ("iceberg.table.kafka.orders.id-columns", "id"),
        ("iceberg.tables.default-commit-branch", "staging"),
        ("iceberg.table.kafka.orders.commit-branch", "staging"),
        ("iceberg.tables.dynamic-enabled", "true"),
    ],
)
def test_what_the_sink_does_and_kafka_s3_does_not_is_refused_naming_the_property(key, value):
    error = error_of({**ICEBERG, key: value})
    assert error.key == key and key in str(error) and "not supported" in str(error)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("iceberg.tables.upsert-mode-enabled", "false"),
        ("iceberg.tables.dynamic-enabled", "false"),
        ("iceberg.tables.default-commit-branch", "main"),
        ("iceberg.table.kafka.orders.commit-branch", "main"),
    ],
)
def test_a_refused_property_at_a_value_asking_nothing_is_accepted(key, value):
    assert iceberg_sink(SINK.parse({**ICEBERG, key: value})) is not None


def test_the_control_topics_settings_are_accepted_with_a_warning():
    config = parse(
        {
            "iceberg.control.topic": "control-iceberg",
            "iceberg.control.commit.threads": "4",
            "iceberg.kafka.bootstrap.servers": "broker:9092",
            "iceberg.hadoop.fs.s3a.impl": "x",
            "iceberg.tables.schema-force-optional": "true",
        }
    )
    for key in ("iceberg.control.topic", "iceberg.control.commit.threads", "iceberg.kafka.bootstrap.servers"):
        assert any(key in warning and "ignored" in warning for warning in config.warnings), key
    assert any("iceberg.hadoop.fs.s3a.impl" in warning for warning in config.warnings)


def test_the_connect_group_id_is_the_backups_group():
    assert parse({"iceberg.connect.group-id": "lake-group"})["group.id"] == "lake-group"


def test_auto_create_evolve_schema_and_table_properties_are_read():
    sink = iceberg_sink(
        parse(
            {
                "iceberg.tables.auto-create-enabled": "true",
                "iceberg.tables.evolve-schema-enabled": "true",
                "iceberg.tables.auto-create-props.format-version": "2",
                "iceberg.tables.write-props.write.parquet.compression-codec": "zstd",
            }
        )
    )
    assert sink is not None and sink.auto_create and sink.evolve_schema
    assert sink.auto_create_props == {"format-version": "2"}
    assert sink.write_props == {"write.parquet.compression-codec": "zstd"}
    assert not iceberg_sink(SINK.parse(ICEBERG)).auto_create  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------------ the catalog
def catalog(**settings: str) -> dict[str, str]:
    raw = {k: v for k, v in ICEBERG.items() if not k.startswith("iceberg.catalog.")}
    raw.update({"iceberg.catalog." + key: value for key, value in settings.items()})
    raw.setdefault("s3.bucket.name", "lake")
    return catalog_properties(SINK.parse(raw))


def test_a_sql_catalog_without_a_database_is_left_to_the_embedded_sqlite_file():
    assert catalog(type="sql", warehouse="s3://lake/wh") == {"type": "sql", "warehouse": "s3://lake/wh"}
    assert catalog(warehouse="s3://lake/wh")["type"] == "sql"  # no type: the SQL catalog


def test_a_sql_catalog_takes_a_sqlalchemy_url_as_it_is():
    uri = "postgresql+psycopg2://u:p@db:5432/iceberg"
    assert catalog(type="sql", uri=uri)["uri"] == uri


def test_javas_jdbc_catalog_on_postgresql_becomes_the_sql_catalog_with_its_user_and_password():
    properties = catalog(
        **{
            "catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "uri": "jdbc:postgresql://db.example:5433/lake?ssl=true",
            "jdbc.user": "kafka s3",
            "jdbc.password": "p@ss:w/rd",
            "jdbc.sslmode": "require",
            "warehouse": "s3a://lake/wh",
        }
    )
    assert properties == {
        "type": "sql",
        "uri": "postgresql+psycopg2://kafka%20s3:p%40ss%3Aw%2Frd@db.example:5433/lake?ssl=true&sslmode=require",
        "warehouse": "s3a://lake/wh",
    }


def test_javas_jdbc_catalog_takes_the_user_from_the_url_too():
    properties = catalog(**{"type": "jdbc", "uri": "jdbc:postgresql://db/lake?user=u&password=secret"})
    assert properties["uri"] == "postgresql+psycopg2://u:secret@db/lake"


def test_javas_jdbc_catalog_on_sqlite_becomes_the_sql_catalog_on_that_file():
    impl = {"catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog"}
    assert catalog(**impl, uri="jdbc:sqlite:/var/lib/lake.db")["uri"] == "sqlite:////var/lib/lake.db"
    assert catalog(**impl, uri="jdbc:sqlite:file:/var/lib/lake.db")["uri"] == "sqlite:////var/lib/lake.db"


def test_a_jdbc_url_of_another_database_is_refused_naming_the_uri():
    with pytest.raises(ConfigError) as caught:
        catalog(**{"catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog", "uri": "jdbc:mysql://db/lake"})
    assert caught.value.key == "iceberg.catalog.uri"


def test_a_rest_catalog_gets_its_properties_as_the_file_gives_them():
    properties = catalog(type="rest", uri="https://catalog:8181", credential="id:secret", warehouse="lakehouse")
    assert properties == {
        "type": "rest",
        "uri": "https://catalog:8181",
        "credential": "id:secret",
        "warehouse": "lakehouse",
    }
    properties = catalog(**{"catalog-impl": "org.apache.iceberg.rest.RESTCatalog", "uri": "http://rest:8181"})
    assert properties["type"] == "rest"


def test_a_rest_catalog_without_its_url_is_an_error_naming_the_key():
    with pytest.raises(ConfigError) as caught:
        catalog(type="rest")
    assert caught.value.key == "iceberg.catalog.uri"


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"type": "hive", "uri": "thrift://hive:9083"}, "iceberg.catalog.type"),
        ({"type": "hadoop"}, "iceberg.catalog.type"),
        ({"catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog"}, "iceberg.catalog.catalog-impl"),
        ({"type": "rest", "catalog-impl": "org.apache.iceberg.rest.RESTCatalog"}, "iceberg.catalog.catalog-impl"),
        ({"io-impl": "org.apache.iceberg.gcp.gcs.GCSFileIO"}, "iceberg.catalog.io-impl"),
        ({"s3.sse.type": "kms", "s3.sse.key": "arn:aws:kms:key"}, "iceberg.catalog.s3.sse.type"),
    ],
)
def test_a_catalog_or_file_io_kafka_s3_does_not_reach_is_refused_when_the_file_loads(settings, key):
    raw = {**{k: v for k, v in ICEBERG.items() if k != "iceberg.catalog.type"}, "s3.bucket.name": "lake"}
    error = error_of(raw | {"iceberg.catalog." + k: v for k, v in settings.items()})
    assert error.key == key


def test_javas_s3_file_io_settings_are_pyicebergs_and_the_stores():
    raw = {
        **ICEBERG,
        "iceberg.catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "iceberg.catalog.s3.endpoint": "http://minio:9000",
        "iceberg.catalog.s3.access-key-id": "AKID",
        "iceberg.catalog.s3.secret-access-key": "SECRET",
        "iceberg.catalog.s3.path-style-access": "true",
        "iceberg.catalog.client.region": "eu-west-1",
    }
    config = SINK.parse(raw)
    properties = catalog_properties(config)
    assert properties["s3.endpoint"] == "http://minio:9000" and properties["s3.force-virtual-addressing"] == "false"
    assert properties["s3.access-key-id"] == "AKID" and properties["client.region"] == "eu-west-1"
    assert "io-impl" not in properties and "s3.path-style-access" not in properties
    assert config["store.url"] == "http://minio:9000" and config["aws.access.key.id"] == "AKID"
    assert config["aws.secret.access.key"] == "SECRET" and config["s3.region"] == "eu-west-1"
    assert config["s3.path.style.access.enabled"] is True


def test_the_stores_own_settings_win_over_the_catalogs():
    config = SINK.parse({**ICEBERG, "iceberg.catalog.s3.endpoint": "http://a:1", "store.url": "http://b:2"})
    assert config["store.url"] == "http://b:2"


def test_a_warehouse_not_on_s3_needs_the_bucket_named():
    raw = {
        **ICEBERG,
        "iceberg.catalog.type": "rest",
        "iceberg.catalog.uri": "http://rest",
        "iceberg.catalog.warehouse": "lake",
    }
    assert error_of(raw).key == "s3.bucket.name"
    assert SINK.parse({**raw, "s3.bucket.name": "lake-bucket"})["s3.bucket.name"] == "lake-bucket"


def test_the_catalogs_secrets_are_hidden_in_the_configuration_dump():
    config = SINK.parse(
        {
            **ICEBERG,
            "iceberg.catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "iceberg.catalog.type": "",
            "iceberg.catalog.uri": "jdbc:postgresql://db/lake?user=u&password=urlpass1",
            "iceberg.catalog.jdbc.password": "jdbcpass1",
            "iceberg.catalog.s3.secret-access-key": "s3secret1",
            "iceberg.catalog.credential": "client:restsecret1",
            "iceberg.catalog.token": "tokenvalue1",
        }
    )
    dump = "\n".join(f"{key}={value}" for key, value, _default in config.as_rows())
    for secret in ("urlpass1", "jdbcpass1", "s3secret1", "restsecret1", "tokenvalue1"):
        assert secret not in dump, secret
    assert f"iceberg.catalog.jdbc.password={REDACTED}" in dump
    assert all(secret in config.secret_values() for secret in ("jdbcpass1", "client:restsecret1", "urlpass1"))


def test_writer_properties_and_schema_evolution_which_have_no_effect_yet_are_said_to_be_ignored():
    config = parse({"iceberg.tables.write-props.write.parquet.compression-codec": "snappy"})
    assert any("write.parquet.compression-codec" in w and "ignored" in w for w in config.warnings), config.warnings
    config = parse({"iceberg.tables.evolve-schema-enabled": "true"})
    assert any("evolve-schema-enabled" in w and "ignored" in w for w in config.warnings), config.warnings
    assert not any("evolve-schema-enabled" in w for w in parse({}).warnings)
