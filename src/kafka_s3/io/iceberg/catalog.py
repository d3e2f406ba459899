"""The Iceberg catalog of a backup configuration, opened with pyiceberg on the driver.

:func:`~kafka_s3.core.config.iceberg.catalog_properties` translates the file's ``iceberg.catalog.*`` (pure); here the
rest is resolved against this machine: the warehouse's S3 settings the file leaves out are the backup's store
settings (``StoreSpec``: endpoint, credentials, region, path style, proxy, role, TLS CA bundle), so the tables' files
and everything else kafka-s3 writes go through one configuration; a SQL catalog without a database is a sqlite file
of this user's (``$KAFKA_S3_ICEBERG_SQLITE_DIR``, else ``$XDG_STATE_HOME/kafka-s3/iceberg``, else
``~/.local/state/kafka-s3/iceberg``). The catalog classes are built directly (not ``load_catalog``), so
``~/.pyiceberg.yaml`` and ``PYICEBERG_*`` variables never change what a configuration file says.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from kafka_s3.core.config.iceberg import iceberg_sink
from kafka_s3.core.config.model import Config, redact_mapping
from kafka_s3.core.errors import CatalogError, ConfigError
from kafka_s3.io.stores.spec import StoreSpec

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

SQLITE_DIR_ENV = "KAFKA_S3_ICEBERG_SQLITE_DIR"
#: pyiceberg's ``py-io-impl``: its pyarrow file IO, verifying TLS against the store's CA bundle
FILE_IO = "kafka_s3.io.iceberg.file_io.StoreFileIO"
CA_BUNDLE = "kafka-s3.tls-ca-file"


def default_sqlite_dir(environ: Mapping[str, str] = os.environ, home: Path | None = None) -> Path:
    """Where a SQL catalog without a database keeps its sqlite file."""
    if environ.get(SQLITE_DIR_ENV):
        return Path(environ[SQLITE_DIR_ENV])
    state = environ.get("XDG_STATE_HOME") or str((home or Path.home()) / ".local" / "state")
    return Path(state) / "kafka-s3" / "iceberg"


def _store_file_io(spec: StoreSpec) -> dict[str, str]:
    """pyiceberg's S3 file IO settings for the backup's store."""
    if spec.sse_customer_key or (spec.sse_algorithm and spec.sse_algorithm != "AES256"):
        key = "s3.sse.customer.key" if spec.sse_customer_key else "s3.ssea.name"
        raise ConfigError(
            f"{key}: an Iceberg table's metadata files are written without per-request encryption (pyiceberg's S3 "
            "file IO): set the bucket's default encryption to KMS instead (s3.ssea.name=AES256 is kept: S3 encrypts "
            "every object with SSE-S3)",
            key=key,
        )
    settings = {
        "s3.region": spec.region,
        "s3.force-virtual-addressing": "false" if spec.path_style else "true",
        "s3.connect-timeout": str(spec.service_timeout_ms / 1000),
        "py-io-impl": FILE_IO,
    }
    if spec.endpoint_url:
        settings["s3.endpoint"] = spec.endpoint_url
    if spec.access_key_id and spec.secret_access_key:
        settings["s3.access-key-id"] = spec.access_key_id
        settings["s3.secret-access-key"] = spec.secret_access_key
    if spec.role_arn:
        settings["s3.role-arn"] = spec.role_arn
        settings["s3.role-session-name"] = spec.role_session_name
    if spec.proxy_url:
        settings["s3.proxy-uri"] = _proxy_uri(spec)
    if spec.ca_bundle:
        settings[CA_BUNDLE] = spec.ca_bundle
    return settings


def _proxy_uri(spec: StoreSpec) -> str:
    assert spec.proxy_url is not None, "a proxy"
    if not spec.proxy_user:
        return spec.proxy_url
    parts = urlsplit(spec.proxy_url)
    user = quote(spec.proxy_user, safe="") + (":" + quote(spec.proxy_password, safe="") if spec.proxy_password else "")
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.netloc.rsplit('@', 1)[-1]}"))


def catalog_properties_from_config(config: Config, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Every pyiceberg property of the configuration's catalog: the file's, then the store's S3 settings where the
    file says nothing, then the default sqlite file. Holds secrets: show it through :func:`redacted`."""
    sink = iceberg_sink(config)
    if sink is None:
        raise ConfigError(
            "not an Iceberg sink configuration: connector.class=org.apache.iceberg.connect.IcebergSinkConnector names "
            "one",
            key="connector.class",
        )
    properties = {**_store_file_io(StoreSpec.from_config(config, environ)), **sink.catalog}
    if properties["type"] == "sql" and "uri" not in properties:
        directory = default_sqlite_dir(environ)
        properties["uri"] = f"sqlite:///{directory / (sink.catalog_name + '.db')}"
    return properties


def redacted(properties: Mapping[str, Any]) -> dict[str, Any]:
    """Catalog properties fit to print or log: secrets and URL passwords hidden."""
    return redact_mapping(properties, ("credential", "s3.session-token"))


def catalog_from_config(config: Config, environ: Mapping[str, str] = os.environ) -> Catalog:
    """The pyiceberg catalog an Iceberg sink configuration names (``iceberg.catalog``, ``iceberg.catalog.*``): a SQL
    catalog (sqlite or PostgreSQL) or a REST catalog, its warehouse reached with the backup's S3 settings. A catalog
    that cannot be reached is a :class:`CatalogError` naming it (passwords hidden)."""
    properties = catalog_properties_from_config(config, environ)
    name = config["iceberg.catalog"]
    if properties["type"] == "sql":
        uri = properties["uri"]
        if uri.startswith("sqlite:///"):
            Path(uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    try:
        if properties["type"] == "sql":
            from pyiceberg.catalog.sql import SqlCatalog

            return SqlCatalog(name, **properties)
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(name, **properties)
    except Exception as exc:  # sqlalchemy's, psycopg2's, requests' and pyiceberg's own errors alike
        shown = redacted(properties).get("uri", "")
        reason = redacted({"reason": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})["reason"]
        raise CatalogError(f"Iceberg catalog {name!r} ({properties['type']}, {shown}) unreachable: {reason}") from exc
