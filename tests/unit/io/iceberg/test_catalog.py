"""The catalog's properties resolved on this machine: the warehouse reached with the backup's own S3 settings, the
embedded sqlite file's place, encryption the catalog's file IO cannot honour refused."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.model import REDACTED
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError
from kafka_s3.io.iceberg.catalog import CA_BUNDLE, FILE_IO, catalog_properties_from_config, redacted

pytestmark = pytest.mark.issue(31, 1)

ICEBERG = {
    "name": "orders-lake",
    "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
    "topics": "orders",
    "iceberg.tables": "kafka.orders",
    "iceberg.catalog.warehouse": "s3://lake/warehouse",
}
NO_ENVIRONMENT: dict[str, str] = {}


def properties(environ=NO_ENVIRONMENT, **settings: str) -> dict[str, str]:
    return catalog_properties_from_config(SINK.parse({**ICEBERG, **settings}), environ)


def test_the_warehouse_is_reached_with_the_backups_store_settings():
    resolved = properties(
        **{
            "store.url": "http://127.0.0.1:21333",
            "aws.access.key.id": "AKID",
            "aws.secret.access.key": "SECRET",
            "s3.region": "eu-west-1",
            "s3.path.style.access.enabled": "false",
            "sts.role.arn": "arn:aws:iam::1:role/lake",
            "service.timeout.ms": "2500",
        }
    )
    assert resolved["s3.endpoint"] == "http://127.0.0.1:21333"
    assert resolved["s3.access-key-id"] == "AKID" and resolved["s3.secret-access-key"] == "SECRET"
    assert resolved["s3.region"] == "eu-west-1" and resolved["s3.force-virtual-addressing"] == "true"
    assert resolved["s3.role-arn"] == "arn:aws:iam::1:role/lake" and resolved["s3.connect-timeout"] == "2.5"
    assert resolved["py-io-impl"] == FILE_IO


def test_the_environments_endpoint_and_region_serve_when_the_file_names_none():
    resolved = properties({"AWS_ENDPOINT_URL_S3": "http://s3.local:9000", "AWS_REGION": "ap-south-1"})
    assert resolved["s3.endpoint"] == "http://s3.local:9000" and resolved["s3.region"] == "ap-south-1"
    assert "s3.access-key-id" not in resolved  # the AWS default chain, as the store's


def test_the_catalogs_own_s3_settings_win():
    resolved = properties(**{"iceberg.catalog.s3.endpoint": "http://catalog-s3:1", "store.url": "http://store:2"})
    assert resolved["s3.endpoint"] == "http://catalog-s3:1"


def test_the_stores_ca_bundle_and_proxy_reach_the_file_io(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    resolved = properties(
        **{
            "s3.ssl.ca.bundle": str(bundle),
            "s3.proxy.url": "http://proxy:3128",
            "s3.proxy.user": "me",
            "s3.proxy.password": "proxy pass",
        }
    )
    assert resolved[CA_BUNDLE] == str(bundle)
    assert resolved["s3.proxy-uri"] == "http://me:proxy%20pass@proxy:3128"


def test_a_sql_catalog_without_a_database_is_a_sqlite_file_of_the_users(tmp_path):
    resolved = properties({"KAFKA_S3_ICEBERG_SQLITE_DIR": str(tmp_path)})
    assert resolved["uri"] == f"sqlite:///{tmp_path}/iceberg.db"
    resolved = properties({"XDG_STATE_HOME": str(tmp_path)}, **{"iceberg.catalog": "lake"})
    assert resolved["uri"] == f"sqlite:///{tmp_path}/kafka-s3/iceberg/lake.db"


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"s3.ssea.name": "aws:kms", "s3.sse.kms.key.id": "k"}, "s3.ssea.name"),
        ({"s3.sse.customer.key": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}, "s3.sse.customer.key"),
    ],
)
def test_encryption_the_catalogs_file_io_cannot_apply_is_refused_naming_the_key(settings, key):
    with pytest.raises(ConfigError) as caught:
        properties(**settings)
    assert caught.value.key == key


def test_sse_s3_is_kept():
    assert properties(**{"s3.ssea.name": "AES256"})["type"] == "sql"


def test_the_resolved_properties_print_without_their_secrets():
    resolved = properties(
        **{
            "aws.access.key.id": "AKID",
            "aws.secret.access.key": "SECRET1",
            "iceberg.catalog.uri": "postgresql+psycopg2://u:dbpass1@db/lake",
            "iceberg.catalog.credential": "id:restsecret1",
        }
    )
    shown = str(redacted(resolved))
    assert "SECRET1" not in shown and "dbpass1" not in shown and "restsecret1" not in shown
    assert REDACTED in shown


def test_a_configuration_of_another_sink_has_no_catalog():
    config = SINK.parse({"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"})
    with pytest.raises(ConfigError) as caught:
        catalog_properties_from_config(config, NO_ENVIRONMENT)
    assert caught.value.key == "connector.class"
