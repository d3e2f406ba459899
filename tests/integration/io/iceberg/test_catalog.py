"""The catalog an Iceberg sink file names, on the real services: the SQL catalog on the project's PostgreSQL (given in
Java's JDBC form) and on the embedded sqlite file, each with its warehouse on the dev S3, holds a table that takes an
append and reads it back; a catalog that cannot be reached is an error naming it without its password."""

from __future__ import annotations

import socket
import uuid
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import CatalogError
from kafka_s3.io.iceberg import catalog_from_config

pytestmark = [pytest.mark.integration, pytest.mark.issue(31, 1)]

ROWS = pa.table(
    {
        "topic": pa.array(["orders"] * 3),
        "partition": pa.array([0, 0, 1], pa.int32()),
        "offset": pa.array([0, 1, 0], pa.int64()),
        "key": pa.array([b"k0", None, b"k2"], pa.binary()),
        "value": pa.array([b"v0", b"v1", None], pa.binary()),
    }
)


@pytest.fixture
def iceberg_config(s3_env, fresh_bucket):
    """``make(catalog_settings)``: a parsed Iceberg sink configuration, its warehouse in the fresh bucket, the dev
    S3's settings as the store's (the catalog's file IO takes them from there)."""

    def make(catalog: dict[str, str]):
        return SINK.parse(
            {
                "name": "lake",
                "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
                "topics": "orders",
                "iceberg.tables": "it.orders",
                "iceberg.catalog.warehouse": f"s3://{fresh_bucket}/warehouse",
                "store.url": s3_env["endpoint_url"],
                "s3.region": s3_env["region"],
                "aws.access.key.id": s3_env["access_key"],
                "aws.secret.access.key": s3_env["secret_key"],
                **{"iceberg.catalog." + key: value for key, value in catalog.items()},
            }
        )

    return make


def round_trip(catalog, bucket: str) -> None:
    """A namespace and a table of fresh names, an append, a scan; the table dropped again (the catalog's database is
    shared by the run)."""
    namespace = "it_" + uuid.uuid4().hex[:12]
    identifier = f"{namespace}.orders"
    catalog.create_namespace(namespace)
    try:
        table = catalog.create_table(identifier, schema=ROWS.schema)
        assert table.location().startswith(f"s3://{bucket}/warehouse/")
        table.append(ROWS)
        assert catalog.load_table(identifier).scan().to_arrow().sort_by([("partition", "ascending")]).equals(ROWS)
    finally:
        if catalog.table_exists(identifier):
            catalog.drop_table(identifier)
        catalog.drop_namespace(namespace)


def test_a_jdbc_catalog_on_the_projects_postgresql_with_its_warehouse_on_s3_holds_a_table(
    services, iceberg_config, fresh_bucket
):
    assert services.postgres_url, "PostgreSQL is not running: `make services-up` starts it, or says why it cannot"
    server = urlsplit(services.postgres_url)
    config = iceberg_config(
        {
            "catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "uri": f"jdbc:postgresql://{server.hostname}:{server.port}{server.path}",
            "jdbc.user": server.username or "",
            "jdbc.password": server.password or "",
        }
    )
    round_trip(catalog_from_config(config), fresh_bucket)


def test_a_sql_catalog_without_a_database_keeps_its_tables_in_the_embedded_sqlite_file(
    iceberg_config, fresh_bucket, tmp_path
):
    config = iceberg_config({"type": "sql"})
    catalog = catalog_from_config(config, {"KAFKA_S3_ICEBERG_SQLITE_DIR": str(tmp_path / "catalogs")})
    round_trip(catalog, fresh_bucket)
    assert (tmp_path / "catalogs" / "iceberg.db").is_file()


def test_a_catalog_that_cannot_be_reached_is_an_error_naming_it_without_its_password(iceberg_config):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = iceberg_config({"type": "sql", "uri": f"postgresql://kafka_s3:hunter2pass@127.0.0.1:{port}/iceberg"})
    with pytest.raises(CatalogError) as caught:
        catalog_from_config(config)
    assert f"127.0.0.1:{port}" in str(caught.value) and "hunter2pass" not in str(caught.value)


def test_a_rest_catalog_that_cannot_be_reached_is_an_error_naming_its_url_without_its_credential(iceberg_config):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    config = iceberg_config(
        {"type": "rest", "uri": url, "credential": "lake:restsecret9", "oauth2-server-uri": f"{url}/v1/oauth/tokens"}
    )
    with pytest.raises(CatalogError) as caught:
        catalog_from_config(config)
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "restsecret9" not in str(caught.value)
