"""Apache Iceberg's Kafka Connect sink configuration, accepted as it is (``connector.class=
org.apache.iceberg.connect.IcebergSinkConnector``): a backup writes the records into Iceberg tables instead of objects.

The sink's property names and defaults are Apache Iceberg's (``IcebergSinkConfig``, docs/docs/kafka-connect.md).
What kafka-s3 takes from them:

- the tables (``iceberg.tables``) and the routing of records to them: every table gets every record, or with
  ``iceberg.tables.route-field=topic`` a record goes to the tables whose ``iceberg.table.<table>.route-regex`` matches
  its topic (one table per topic);
- ``iceberg.tables.auto-create-enabled``, ``iceberg.tables.evolve-schema-enabled``, the partition specs
  (``iceberg.tables.default-partition-by``, ``iceberg.table.<table>.partition-by``);
- ``iceberg.catalog.*``, translated into pyiceberg's catalog properties (:func:`catalog_properties`): the SQL catalog
  (``type=sql``; a sqlite file unless ``uri`` names a database), Java's JDBC catalog (``catalog-impl=
  org.apache.iceberg.jdbc.JdbcCatalog``, ``uri=jdbc:postgresql://...``, ``jdbc.user``, ``jdbc.password``) as the same
  SQL catalog, and the REST catalog (``type=rest``); Java's S3FileIO settings as pyiceberg's;
- the warehouse's bucket, endpoint and credentials as the backup's store settings (``s3.bucket.name``, ``store.url``,
  ``aws.access.key.id``...), so the tables and what kafka-s3 keeps beside them share one store.

What the sink does and kafka-s3 does not (upserts, CDC, identifier columns, branches, dynamic routing on a value
field, other catalogs and file systems) is refused, naming the property: a table written otherwise than the file asks
would not be what its users expect. The control topic's and Kafka Connect's own settings are accepted without effect
(a warning): kafka-s3's driver commits each cycle itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from kafka_s3.core.config.model import Config, ConfigDef, Importance, Prop, Range, Type
from kafka_s3.core.errors import ConfigError

#: ``connector.class`` of Apache Iceberg's sink, and of Tabular's, where it came from (same properties)
ICEBERG_SINK_CLASSES = (
    "org.apache.iceberg.connect.IcebergSinkConnector",
    "io.tabular.iceberg.connect.IcebergSinkConnector",
)
CATALOG_PREFIX = "iceberg.catalog."
TABLE_PREFIX = "iceberg.table."
AUTO_CREATE_PROPS_PREFIX = "iceberg.tables.auto-create-props."
WRITE_PROPS_PREFIX = "iceberg.tables.write-props."
#: the one route field kafka-s3 routes on: the record's topic, a column of every table it writes
ROUTE_FIELD_TOPIC = "topic"
#: ``iceberg.control.commit.interval-ms``'s default in the Java sink: one commit every 5 minutes
COMMIT_INTERVAL_MS_DEFAULT = 300_000
#: ``flush.size`` when the file does not set it (the S3 sink requires it; the Iceberg sink has no such key)
DEFAULT_FLUSH_SIZE = 1_000_000

JDBC_CATALOG_IMPL = "org.apache.iceberg.jdbc.JdbcCatalog"
REST_CATALOG_IMPL = "org.apache.iceberg.rest.RESTCatalog"
#: ``io-impl`` values whose files kafka-s3 reaches (through pyarrow's S3 file system or the local one)
S3_FILE_IOS = ("org.apache.iceberg.aws.s3.S3FileIO", "org.apache.iceberg.hadoop.HadoopFileIO")
H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
GROUP = "Iceberg"

#: the table-level settings ``iceberg.table.<table>.<setting>`` kafka-s3 takes
TABLE_SETTINGS = ("route-regex", "partition-by")
#: settings of the sink kafka-s3 does not do: the property (or, for ``iceberg.table.<table>.*``, its last part) and why
REFUSED = {
    "iceberg.tables.upsert-mode-enabled": "upserts (equality deletes) would drop records a restore must bring back",
    "iceberg.tables.cdc-field": "change-data-capture tables (deletes and updates) are not backups of every record",
    "iceberg.tables.default-id-columns": (
        "identifier columns go with upserts; a kafka-s3 table is identified by topic, partition and offset"
    ),
    "id-columns": "identifier columns go with upserts; a kafka-s3 table is identified by topic, partition and offset",
    "iceberg.tables.default-commit-branch": "kafka-s3 commits to the table's main branch only",
    "commit-branch": "kafka-s3 commits to the table's main branch only",
    "iceberg.tables.dynamic-enabled": (
        "tables named by a record field are not supported: list them in iceberg.tables and route by topic "
        "(iceberg.tables.route-field=topic, iceberg.table.<table>.route-regex)"
    ),
}
#: what a refused boolean or branch may still say without asking for anything
_HARMLESS = {"", "false", "main"}
_WITHOUT_EFFECT = "kafka-s3's driver commits each cycle itself: no control topic, coordinator or Connect worker"
UNSUPPORTED = {
    "iceberg.control.topic": _WITHOUT_EFFECT,
    "iceberg.control.group-id-prefix": _WITHOUT_EFFECT,
    "iceberg.control.commit.timeout-ms": _WITHOUT_EFFECT,
    "iceberg.control.commit.threads": _WITHOUT_EFFECT,
    "iceberg.control.commit.max-consecutive-failures": _WITHOUT_EFFECT,
    "iceberg.coordinator.transactional.prefix": _WITHOUT_EFFECT,
    "iceberg.coordinator-executor-keep-alive-timeout-ms": _WITHOUT_EFFECT,
    "iceberg.hadoop-conf-dir": "No Hadoop configuration is read: the warehouse is reached through S3 settings.",
    "iceberg.tables.schema-force-optional": "The value's columns are always optional; the record's never null.",
    "iceberg.tables.schema-case-insensitive": "Columns are looked up by their exact names.",
}
#: prefixes accepted without effect (a warning each)
UNSUPPORTED_PREFIXES = {
    "iceberg.hadoop.": "No Hadoop configuration is read: the warehouse is reached through S3 settings.",
    "iceberg.kafka.": "kafka-s3 has no control topic: its Kafka settings are the file's own.",
    WRITE_PROPS_PREFIX: "the data files are zstd Parquet written by kafka-s3's own writer settings.",
}
_COMMA_OUTSIDE_PARENS = re.compile(r",(?![^()]*\))")
# Java's S3FileIO settings pyiceberg names otherwise (or has not): translated, not passed on. The others (s3.endpoint,
# s3.access-key-id, s3.secret-access-key, client.region...) are pyiceberg's names too.
_TRANSLATED_S3_FILE_IO = ("s3.sse.type", "s3.sse.key", "s3.path-style-access")
_JAVA_ONLY = ("catalog-impl", "io-impl")


def is_iceberg_sink(settings: Mapping[str, Any]) -> bool:
    """Whether ``settings`` (raw or parsed) are an Iceberg sink's."""
    return settings.get("connector.class") in ICEBERG_SINK_CLASSES


def split_partition_by(text: str) -> list[str]:
    """The terms of a ``partition-by`` value, split at the commas outside parentheses (``bucket(key, 16)`` is one),
    as the Java sink splits them."""
    return [term.strip() for term in _COMMA_OUTSIDE_PARENS.split(text or "") if term.strip()]


def check_partition_by(key: str, text: str) -> None:
    """``text`` as the table's partition spec (``kafka_s3.core.iceberg.partitioning``: the backup's columns and
    year/month/day/hour of timestamp), or a :class:`ConfigError` naming ``key``."""
    from kafka_s3.core.iceberg.partitioning import PARTITION_BY_KEY, parse_partition_by

    try:
        parse_partition_by(text)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(PARTITION_BY_KEY, key, 1), key=key) from None


# ------------------------------------------------------------------------------------------------ the translation
def _warehouse(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """(bucket, key prefix) of an ``s3://``/``s3a://``/``s3n://`` warehouse, else ``None``."""
    parts = urlsplit(str(raw.get(CATALOG_PREFIX + "warehouse", "")).strip())
    if parts.scheme not in ("s3", "s3a", "s3n") or not parts.netloc:
        return None
    return parts.netloc, parts.path.strip("/")


def defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """A ConfigDef preprocessor: an Iceberg sink file as a backup's settings. The records are kept whole (the
    envelope's columns, Parquet data files); the warehouse's bucket and S3 settings are the store's; the commit
    interval is the cycle's. Keys the file sets itself win."""
    if not is_iceberg_sink(raw):
        return raw
    raw.setdefault("format.class", "parquet")
    raw.setdefault("store.envelope", "true")
    raw.setdefault("flush.size", str(DEFAULT_FLUSH_SIZE))
    raw.setdefault("cycle.interval.ms", raw.get("iceberg.control.commit.interval-ms", str(COMMIT_INTERVAL_MS_DEFAULT)))
    warehouse = _warehouse(raw)
    if warehouse is not None:
        raw.setdefault("s3.bucket.name", warehouse[0])
        if "topics.dir" not in raw:
            raw["topics.dir"] = warehouse[1]
    for java, ours in (
        ("s3.endpoint", "store.url"),
        ("s3.access-key-id", "aws.access.key.id"),
        ("s3.secret-access-key", "aws.secret.access.key"),
        ("client.region", "s3.region"),
        ("s3.region", "s3.region"),
        ("s3.path-style-access", "s3.path.style.access.enabled"),
    ):
        if CATALOG_PREFIX + java in raw and ours not in raw:
            raw[ours] = raw[CATALOG_PREFIX + java]
    return raw


def _jdbc_to_sqlalchemy(uri: str, catalog: Mapping[str, str]) -> str:
    """Java's JDBC URL (``jdbc:postgresql://host:port/db?...``, ``jdbc:sqlite:/path``) with ``jdbc.user`` and
    ``jdbc.password`` as the SQLAlchemy URL pyiceberg's SQL catalog takes; the other ``jdbc.*`` settings become the
    URL's query parameters (``jdbc.sslmode=require`` → ``?sslmode=require``)."""
    body = uri[len("jdbc:") :]
    if body.startswith("sqlite:"):
        return "sqlite:///" + body[len("sqlite:") :].removeprefix("file:")
    if not body.startswith(("postgresql:", "postgres:")):
        raise ConfigError(
            f"iceberg.catalog.uri={uri!r}: kafka-s3's JDBC catalog runs on PostgreSQL (jdbc:postgresql://host:port/db) "
            "or sqlite (jdbc:sqlite:/path/file.db)",
            key=CATALOG_PREFIX + "uri",
        )
    parts = urlsplit(body.replace("postgres:", "postgresql:", 1) if body.startswith("postgres:") else body)
    query = dict(parse_qsl(parts.query))
    user = catalog.get("jdbc.user") or query.pop("user", "")
    password = catalog.get("jdbc.password") or query.pop("password", "")
    query.pop("user", None)
    query.pop("password", None)
    for key, value in catalog.items():
        if key.startswith("jdbc.") and key not in ("jdbc.user", "jdbc.password", "jdbc.schema-version"):
            query[key[len("jdbc.") :]] = value
    credentials = quote(user, safe="") + (":" + quote(password, safe="") if password else "") + "@" if user else ""
    host = parts.netloc.rsplit("@", 1)[-1]
    tail = "?" + urlencode(query) if query else ""
    return f"postgresql+psycopg2://{credentials}{host}{parts.path}{tail}"


def catalog_properties(config: Mapping[str, Any]) -> dict[str, str]:
    """pyiceberg's catalog properties for an Iceberg sink configuration's ``iceberg.catalog.*``: ``type`` is ``sql``
    or ``rest``; the SQL catalog's ``uri`` is a SQLAlchemy URL (absent when the file names no database: the edge
    puts the embedded sqlite file there); Java's S3FileIO settings are pyiceberg's. The S3 settings
    the file leaves out come from the backup's store settings at the edge (``kafka_s3.io.iceberg``)."""
    given = config.originals if isinstance(config, Config) else config  # a parsed Config keeps them as given
    raw = {key[len(CATALOG_PREFIX) :]: str(value) for key, value in given.items() if key.startswith(CATALOG_PREFIX)}
    kind = (raw.get("type") or "").strip().lower()
    impl = (raw.get("catalog-impl") or "").strip()
    uri = (raw.get("uri") or "").strip()
    if kind and impl:
        raise ConfigError(
            f"iceberg.catalog.type={kind} and iceberg.catalog.catalog-impl={impl} are both set: set one",
            key=CATALOG_PREFIX + "catalog-impl",
        )
    if impl == JDBC_CATALOG_IMPL or kind == "jdbc":
        kind, uri = "sql", _jdbc_to_sqlalchemy(uri, raw) if uri else ""
    elif impl == REST_CATALOG_IMPL:
        kind = "rest"
    elif impl:
        raise ConfigError(
            f"iceberg.catalog.catalog-impl={impl} is not a catalog kafka-s3 reaches: use {JDBC_CATALOG_IMPL} "
            f"(PostgreSQL or sqlite), {REST_CATALOG_IMPL}, or iceberg.catalog.type=sql or rest",
            key=CATALOG_PREFIX + "catalog-impl",
        )
    elif kind in ("", "sql"):
        kind = "sql"
        if uri.startswith("jdbc:"):
            uri = _jdbc_to_sqlalchemy(uri, raw)
    elif kind != "rest":
        raise ConfigError(
            f"iceberg.catalog.type={kind} is not a catalog kafka-s3 reaches: sql (sqlite or PostgreSQL), rest, or "
            f"catalog-impl={JDBC_CATALOG_IMPL}",
            key=CATALOG_PREFIX + "type",
        )
    elif not uri:
        raise ConfigError(
            "iceberg.catalog.type=rest needs iceberg.catalog.uri (the REST server's URL)", key=CATALOG_PREFIX + "uri"
        )
    io_impl = (raw.get("io-impl") or "").strip()
    if io_impl and io_impl not in S3_FILE_IOS:
        raise ConfigError(
            f"iceberg.catalog.io-impl={io_impl}: kafka-s3 reaches warehouses on S3 ({', '.join(S3_FILE_IOS)})",
            key=CATALOG_PREFIX + "io-impl",
        )
    sse = (raw.get("s3.sse.type") or "none").strip().lower()
    if sse not in ("none", "s3"):
        raise ConfigError(
            f"iceberg.catalog.s3.sse.type={sse}: the table's metadata files are written with the bucket's default "
            "encryption (SSE-S3 on AWS); set the bucket's default encryption to use KMS",
            key=CATALOG_PREFIX + "s3.sse.type",
        )
    out = {
        key: value
        for key, value in raw.items()
        if key not in (*_JAVA_ONLY, *_TRANSLATED_S3_FILE_IO) and not (kind == "sql" and key.startswith("jdbc."))
    }
    if "s3.path-style-access" in raw:
        out["s3.force-virtual-addressing"] = "false" if raw["s3.path-style-access"].lower() == "true" else "true"
    out["type"] = kind
    out.pop("uri", None)
    if uri:
        out["uri"] = uri
    return out


# ----------------------------------------------------------------------------------------------------- the settings
@dataclass(frozen=True)
class IcebergRoute:
    """One destination table and the topics it takes (``None``: every record)."""

    table: str
    topic_regex: str | None = None

    def takes(self, topic: str) -> bool:
        return self.topic_regex is None or re.fullmatch(self.topic_regex, topic) is not None


@dataclass(frozen=True)
class IcebergSink:
    """What an Iceberg sink configuration asks of a backup: its tables, how records are routed to them, how tables
    are created and evolve, and the catalog (pyiceberg's properties, before the edge adds the store's S3 settings)."""

    routes: tuple[IcebergRoute, ...]
    auto_create: bool
    evolve_schema: bool
    catalog_name: str
    catalog: dict[str, str]
    partition_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    auto_create_props: dict[str, str] = field(default_factory=dict)
    write_props: dict[str, str] = field(default_factory=dict)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(route.table for route in self.routes)

    def tables_for(self, topic: str) -> tuple[str, ...]:
        """The tables a record of ``topic`` goes to."""
        return tuple(route.table for route in self.routes if route.takes(topic))


def iceberg_sink(config: Config) -> IcebergSink | None:
    """The Iceberg side of a parsed backup configuration (``None``: not an Iceberg sink's)."""
    if not is_iceberg_sink(config):
        return None
    tables = list(config["iceberg.tables"])
    table_settings = _table_settings(config.originals, tables)
    routed = config["iceberg.tables.route-field"] != ""
    routes = tuple(
        IcebergRoute(table, table_settings.get(table, {}).get("route-regex") if routed else None) for table in tables
    )
    default_partition = tuple(split_partition_by(config["iceberg.tables.default-partition-by"]))
    partition_by = {
        table: tuple(split_partition_by(settings["partition-by"])) if "partition-by" in settings else default_partition
        for table, settings in ((table, table_settings.get(table, {})) for table in tables)
    }
    return IcebergSink(
        routes=routes,
        auto_create=config["iceberg.tables.auto-create-enabled"],
        evolve_schema=config["iceberg.tables.evolve-schema-enabled"],
        catalog_name=config["iceberg.catalog"],
        catalog=catalog_properties(config),
        partition_by=partition_by,
        auto_create_props=config.with_prefix(AUTO_CREATE_PROPS_PREFIX),
        write_props=config.with_prefix(WRITE_PROPS_PREFIX),
    )


def _table_settings(raw: Mapping[str, Any], tables: list[str]) -> dict[str, dict[str, str]]:
    """``iceberg.table.<table>.<setting>`` per table of ``tables`` (the longest table name that prefixes the key
    wins: table names hold dots); a key naming no listed table, or a setting kafka-s3 does not take, is an error."""
    out: dict[str, dict[str, str]] = {}
    by_length = sorted(tables, key=len, reverse=True)
    for key, value in raw.items():
        if not key.startswith(TABLE_PREFIX):
            continue
        rest = key[len(TABLE_PREFIX) :]
        table = next((t for t in by_length if rest.startswith(t + ".")), None)
        setting = rest[len(table) + 1 :] if table is not None else rest.rsplit(".", 1)[-1]
        if setting in REFUSED:
            if str(value).strip().lower() not in _HARMLESS:
                raise ConfigError(f"{key} is not supported by kafka-s3: {REFUSED[setting]}", key=key)
            continue
        if table is None:
            raise ConfigError(
                f"{key}: the table it names is not in iceberg.tables ({', '.join(tables) or 'empty'})", key=key
            )
        if setting not in TABLE_SETTINGS:
            raise ConfigError(
                f"{key}: kafka-s3 takes iceberg.table.<table>.{' and .'.join(TABLE_SETTINGS)} (not {setting!r})",
                key=key,
            )
        out.setdefault(table, {})[setting] = str(value)
    return out


def _check_iceberg(config: Config) -> None:
    """The Iceberg sink's rules and kafka-s3's refusals, on a configuration of its connector class; a warning for
    Iceberg settings in a file of another connector."""
    given = [key for key in config.originals if key.startswith("iceberg.")]
    if not is_iceberg_sink(config):
        if given:
            config.warnings.append(
                f"{', '.join(sorted(given)[:3])}{'...' if len(given) > 3 else ''}: Iceberg sink settings without "
                f"connector.class={ICEBERG_SINK_CLASSES[0]} are ignored"
            )
        return
    for key in given:
        if key in REFUSED and str(config.originals[key]).strip().lower() not in _HARMLESS:
            raise ConfigError(f"{key} is not supported by kafka-s3: {REFUSED[key]}", key=key)
        prefix = next((p for p in UNSUPPORTED_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            config.warnings.append(
                f"'{key}' is not supported by kafka-s3 and is ignored: {UNSUPPORTED_PREFIXES[prefix]}"
            )
    if config["iceberg.tables.evolve-schema-enabled"]:
        config.warnings.append(
            "'iceberg.tables.evolve-schema-enabled' is not supported by kafka-s3 and is ignored: the table holds each "
            "record's key and value as bytes, not the value's fields as columns"
        )
    check_partition_by("iceberg.tables.default-partition-by", config["iceberg.tables.default-partition-by"])
    tables = config["iceberg.tables"]
    if not tables:
        raise ConfigError(
            "iceberg.tables is empty: name the table(s) the backup writes (namespace.table, comma-separated)",
            key="iceberg.tables",
        )
    for table in tables:
        if "." not in table.strip(".") or ".." in table:
            raise ConfigError(
                f"iceberg.tables: {table!r} is not namespace.table (e.g. kafka.orders)", key="iceberg.tables"
            )
    settings = _table_settings(config.originals, tables)
    route_field = config["iceberg.tables.route-field"]
    if route_field and route_field != ROUTE_FIELD_TOPIC:
        raise ConfigError(
            f"iceberg.tables.route-field={route_field}: kafka-s3 routes records by their topic "
            f"(iceberg.tables.route-field={ROUTE_FIELD_TOPIC} with iceberg.table.<table>.route-regex); a value field "
            "is not supported",
            key="iceberg.tables.route-field",
        )
    for table in tables:
        regex = settings.get(table, {}).get("route-regex")
        key = f"{TABLE_PREFIX}{table}.route-regex"
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise ConfigError(f"{key}={regex!r} is not a regular expression: {exc}", key=key) from None
            if not route_field:
                config.warnings.append(
                    f"{key} has no effect without iceberg.tables.route-field={ROUTE_FIELD_TOPIC}: every table gets "
                    "every record"
                )
        elif route_field:
            raise ConfigError(
                f"iceberg.tables.route-field is set but {key} is not: which topics does {table} take?", key=key
            )
        if "partition-by" in settings.get(table, {}):
            check_partition_by(f"{TABLE_PREFIX}{table}.partition-by", settings[table]["partition-by"])
    if route_field:
        sink = iceberg_sink(config)
        assert sink is not None, "an Iceberg sink configuration"
        for topic in config["topics"]:
            if not sink.tables_for(topic):
                raise ConfigError(
                    f"topic {topic!r} matches no iceberg.table.<table>.route-regex: its records would be backed up "
                    "nowhere",
                    key="iceberg.tables.route-field",
                )
    catalog_properties(config)  # its refusals, now rather than when the backup starts
    for key, wanted in (("format.class", "parquet"), ("store.envelope", True)):
        if config[key] != wanted:
            raise ConfigError(
                f"{key}={config.originals.get(key)}: an Iceberg table holds every record whole in Parquet data files "
                f"({key}={str(wanted).lower()}, the default of an Iceberg sink file): leave {key} out",
                key=key,
            )
    if "s3.bucket.name" not in config.originals:
        raise ConfigError(
            "iceberg.catalog.warehouse is not an s3:// location: set s3.bucket.name (and store.url for an "
            "S3-compatible store) to the bucket the tables' files go to",
            key="s3.bucket.name",
        )


ICEBERG = ConfigDef(
    "iceberg",
    unsupported=dict(UNSUPPORTED),
    passthrough_prefixes=(CATALOG_PREFIX, TABLE_PREFIX, AUTO_CREATE_PROPS_PREFIX, WRITE_PROPS_PREFIX)
    + tuple(UNSUPPORTED_PREFIXES),
    checks=[_check_iceberg],
    preprocessors=[defaults],
    aliases={"iceberg.connect.group-id": "group.id"},
)
ICEBERG.define(
    Prop(
        "iceberg.tables",
        Type.LIST,
        "",
        "With connector.class=org.apache.iceberg.connect.IcebergSinkConnector: the Iceberg tables the backup writes "
        "(namespace.table, comma-separated). Every table gets every record unless iceberg.tables.route-field=topic "
        "routes them. Such a file needs no flush.size, format.class or s3.bucket.name: records are kept whole in "
        "Parquet data files, in the bucket of iceberg.catalog.warehouse (s3://bucket/path), and a cycle commits one "
        "snapshot every iceberg.control.commit.interval-ms (cycle.interval.ms).",
        H,
        GROUP,
    ),
    Prop(
        "iceberg.tables.route-field",
        Type.STRING,
        "",
        "topic: each record goes to the tables whose iceberg.table.<table>.route-regex matches its topic (one "
        "table per topic). Empty: every table gets every record. Routing on a value field is not supported.",
        M,
        GROUP,
    ),
    Prop(
        "iceberg.tables.auto-create-enabled",
        Type.BOOLEAN,
        "false",
        "Create a missing table (and its namespace), with iceberg.tables.auto-create-props.* as its properties; "
        "false: a missing table is an error.",
        M,
        GROUP,
    ),
    Prop(
        "iceberg.tables.default-partition-by",
        Type.STRING,
        "",
        "Partition fields of a created table, comma-separated: a column (topic, partition, timestampType, key, "
        "value) or year, month, day or hour of timestamp (hour(timestamp)); iceberg.table.<table>.partition-by "
        "overrides it per table. bucket and truncate are refused.",
        M,
        GROUP,
    ),
    Prop(
        "iceberg.tables.evolve-schema-enabled",
        Type.BOOLEAN,
        "false",
        "Add a new optional field of the value's schema as a new column; false: a record whose value has a field "
        "the table lacks is an error.",
        M,
        GROUP,
    ),
    Prop("iceberg.catalog", Type.STRING, "iceberg", "Name of the catalog.", L, GROUP),
    Prop(
        "iceberg.control.commit.interval-ms",
        Type.LONG,
        str(COMMIT_INTERVAL_MS_DEFAULT),
        "Time between commits: with an Iceberg sink file, cycle.interval.ms's default (one snapshot per cycle).",
        M,
        GROUP,
        Range(0),
    ),
)
