"""KCQL statements (``connect.s3.kcql``, parsed by :mod:`kafka_s3.core.peers.lenses.kcql`) turned into ordinary
properties, and the ``connect.s3.kcql`` property itself: Lenses' configuration translated.

Each statement becomes the properties a properties file would give:

=============================  =========================================================================
KCQL                           properties
=============================  =========================================================================
``INSERT INTO b:p``            ``s3.bucket.name=b``, ``topics.dir=p`` (no ``:p``: objects at the bucket root)
``FROM t``                     ``topics=t`` (and no ``topics.regex``)
``STOREAS AVRO``               ``format.class``: AVRO→avro, PARQUET→parquet, JSON→json, TEXT and BYTES→bytearray
                               (under Lenses' sink class lenses_text and lenses_bytes, Lenses' own objects),
                               CSV→csv, CSV_WITHHEADERS→csv_withheaders;
                               any other kafka-s3 format name is accepted too (``block_gzip``...)
``WITH_FLUSH_COUNT n``         ``flush.size=n`` (default 50000 when neither the statement nor the file sets it)
``WITH_FLUSH_SIZE n``          ``rotate.size.bytes=n``: the bytes of records (keys, values, headers) written since
                               the last commit, which is close to the object size before compression
``WITH_FLUSH_INTERVAL s``      ``rotate.schedule.interval.ms=s*1000``, with ``timezone=UTC`` unless the file sets
                               one: open files commit on a wall-clock schedule (not exactly-once, like any
                               scheduled rotation). Under Lenses' sink class ``rotate.schedule.anchor=open`` (no
                               timezone): ``s`` seconds after the chunk opened, as Lenses' ``Interval`` condition
(Lenses' sink class)           without them in the statement or the file: Lenses' defaults (LS ``FlushSettings``),
                               ``rotate.size.bytes=500000000``, ``rotate.schedule.interval.ms=3600000``; a
                               ``PROPERTIES`` flush value <= 0 means the default
``PARTITIONBY a, _key, ...``   ``partitioner.class=kcql``, ``partition.field.name=a,_key,...``: value fields
                               (nested with dots), ``_key`` (or ``_key.field``), ``_header.<name>``
``WITHPARTITIONER Values``     ``partition.path.style``: Values (the default; KeysAndValues under Lenses' sink
                               class) makes ``v1/v2`` directories, KeysAndValues makes ``f1=v1/f2=v2`` directories
=============================  =========================================================================

Objects keep the Confluent layout (``<prefix>/<topic>/<directories>/<topic>+<partition>+<offset><ext>``), except
under Lenses' sink class, where :func:`~kafka_s3.core.peers.lenses.policy.lenses_layout_blockers` says when Lenses'
own layout is written (there ``STOREAS JSON``, ``AVRO`` and ``PARQUET`` become Lenses' own formats: ``lenses_json``,
``lenses_avro``, ``lenses_parquet``, with ``connect.s3.compression.codec`` read into their codec). A statement's
settings win over the file's; the file supplies everything else (converters, credentials, ``name``...). The
statements of one file run as one backup (see :mod:`kafka_s3.pipelines.backup.group`): they share the consumer group
``connect-<name>``, so one topic may appear in only one statement.

A *source* statement (``connector.class`` Lenses' S3 source: ``INSERT INTO topic SELECT * FROM bucket:prefix STOREAS
JSON``) restores every topic under ``bucket:prefix`` into ``topic`` (:func:`source_properties`). Lenses' own defaults
and limits the translation applies are :mod:`kafka_s3.core.peers.lenses.policy`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_s3.core.config.model import ConfigDef, Importance, Prop, Type
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY, Statement, error, parse
from kafka_s3.core.peers.lenses.policy import (
    COMPRESSION_CODEC_KEY,
    COMPRESSION_LEVEL_KEY,
    LENSES_DATE_PREFIX,
    LENSES_DEFAULT_FLUSH_INTERVAL_MS,
    LENSES_DEFAULT_FLUSH_SIZE,
    LENSES_ENVELOPE_PROPERTIES,
    LENSES_LAYOUT_FORMATS,
    LENSES_STRUCT_CODECS,
    PADDING_PREFIX,
    SIDECAR_KEYS,
    SINK_CLASS,
    SOURCE_CLASS,
    envelope_property,
    json_compression,
    lenses_date_printer,
    lenses_layout_blockers,
    padding_widths,
    struct_compression,
)

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

DEFAULT_FLUSH_COUNT = "50000"
#: ``PROPERTIES('flush.count'=n, ...)`` of a sink statement (Lenses ≥7.0 replaced WITH_FLUSH_* with them)
SINK_PROPERTIES = {"flush.count": "flush_count", "flush.size": "flush_size", "flush.interval": "flush_interval"}
#: PROPERTIES of a Lenses sink statement naming its PARTITIONBY directories ``name=value`` (true) or ``value`` (false)
INCLUDE_KEYS = "partition.include.keys"
#: STOREAS TEXT/BYTES of a Lenses sink or source statement → Lenses' own TEXT/BYTES objects (:mod:`.text`)
LENSES_PLAIN = {"TEXT": "lenses_text", "BYTES": "lenses_bytes"}
#: STOREAS of a Lenses source statement → the format reading Lenses' objects
SOURCE_STORE_AS = {
    "JSON": "lenses_json",
    "AVRO": "lenses_avro",
    "PARQUET": "lenses_parquet",
    "CSV": "csv",
    "CSV_WITHHEADERS": "csv_withheaders",
    **LENSES_PLAIN,
}
TARGET_TRANSFORM = "kcqlTarget"


def source_properties(statement: Statement, raw: Mapping[str, Any]) -> dict[str, str]:
    """The properties of a Lenses *source* statement: ``INSERT INTO topic SELECT * FROM bucket:prefix STOREAS JSON
    [PROPERTIES('store.envelope'=true)]`` restores every topic found under ``bucket:prefix`` into ``topic``."""
    target, bucket = statement.bucket, statement.topic
    props = {"s3.bucket.name": bucket, "topics.dir": statement.from_prefix or ""}
    store_as = (statement.store_as_name or "").upper()
    if store_as not in SOURCE_STORE_AS:
        raise error(
            statement.topic_token,
            f"STOREAS {statement.store_as_name or '(none)'}: restoring Lenses' objects supports STOREAS "
            f"{', '.join(SOURCE_STORE_AS)}",
        )
    props["format.class"] = SOURCE_STORE_AS[store_as]
    props["store.envelope"] = "false"
    if store_as not in ("AVRO", "PARQUET", *LENSES_PLAIN):  # Avro/Parquet: codec inside the object, read any
        props.update(json_compression(raw))
    codec = str(raw.get(COMPRESSION_CODEC_KEY) or "UNCOMPRESSED").strip().upper()
    if store_as in LENSES_PLAIN and codec != "UNCOMPRESSED":
        raise ConfigError(
            f"{COMPRESSION_CODEC_KEY}={codec}: Lenses' STOREAS {store_as} objects are not compressed (LS "
            "FormatSelection: UNCOMPRESSED only)",
            key=COMPRESSION_CODEC_KEY,
        )
    for key, value, token in statement.options:
        if key != "store.envelope":
            raise error(token, f"PROPERTIES key {key!r} is not supported by a restore (supported: store.envelope)")
        if value.lower() not in ("true", "false"):
            raise error(token, f"'store.envelope' must be true or false, found {value!r}")
        props["store.envelope"] = value.lower()
    # the statement's own router first (once: the properties may be expanded again when parsed)
    transforms = [t.strip() for t in str(raw.get("transforms") or "").split(",") if t.strip()]
    transforms = [t for t in transforms if t != TARGET_TRANSFORM]
    props["transforms"] = ",".join([TARGET_TRANSFORM, *transforms])
    prefix = f"transforms.{TARGET_TRANSFORM}."
    props[prefix + "type"] = "org.apache.kafka.connect.transforms.RegexRouter"
    props[prefix + "regex"] = ".*"
    props[prefix + "replacement"] = target
    props[KCQL_KEY] = statement.text
    return props


def sink_properties(statement: Statement, raw: Mapping[str, Any]) -> dict[str, str]:
    """The properties this statement sets, given the file's other settings ``raw``."""
    if statement.from_prefix is not None:
        raise error(
            statement.topic_token,
            f"FROM {statement.topic}:{statement.from_prefix} reads a bucket: that is a source statement (set "
            f"connector.class={SOURCE_CLASS} to restore), a sink statement reads FROM a topic",
        )
    props = {"s3.bucket.name": statement.bucket, "topics.dir": statement.prefix or "", "topics": statement.topic}
    lenses = raw.get("connector.class") == SINK_CLASS
    if statement.store_as:
        props["format.class"] = statement.store_as
        if lenses and (statement.store_as_name or "").upper() in LENSES_PLAIN:
            props["format.class"] = LENSES_PLAIN[(statement.store_as_name or "").upper()]
    elif lenses and not raw.get("format.class"):
        props["format.class"] = "json"  # LS config/FormatSelection.fromKcql: no STOREAS is JSON
    elif not raw.get("format.class"):
        raise error(
            statement.topic_token,
            f"the statement for topic {statement.topic!r} has no STOREAS and format.class is "
            "not set: add e.g. STOREAS JSON",
        )
    flush = {
        "flush_count": statement.flush_count,
        "flush_size": statement.flush_size,
        "flush_interval": statement.flush_interval,
    }
    supported = [*SINK_PROPERTIES, *((*LENSES_ENVELOPE_PROPERTIES, INCLUDE_KEYS) if lenses else ())]
    include_keys: str | None = None
    for key, value, token in statement.options:
        if lenses and key in LENSES_ENVELOPE_PROPERTIES:
            props.update(envelope_property(key, value, token))
            continue
        if lenses and key.startswith(PADDING_PREFIX):
            continue  # checked by padding_widths below
        if lenses and key == INCLUDE_KEYS:
            if value.lower() not in ("true", "false"):
                raise error(token, f"PROPERTIES {key!r} must be true or false, found {value!r}")
            include_keys = "KeysAndValues" if value.lower() == "true" else "Values"
            continue
        if key not in SINK_PROPERTIES:
            raise error(token, f"PROPERTIES key {key!r} is not supported (supported: {', '.join(supported)})")
        if lenses and re.fullmatch(r"-?[0-9]+", value) and int(value) <= 0:
            flush[SINK_PROPERTIES[key]] = None  # LS FlushSettings: a value <= 0 is the default
            continue
        if not value.isdigit() or int(value) <= 0:
            raise error(token, f"PROPERTIES {key!r} must be a positive whole number, found {value!r}")
        flush[SINK_PROPERTIES[key]] = int(value)
    if lenses:
        padding_widths(statement.options)
        if props.get("format.class") == "lenses_bytes" and flush["flush_count"] != 1:
            raise error(
                statement.topic_token,
                f"STOREAS BYTES for topic {statement.topic!r} needs PROPERTIES('flush.count'=1): Lenses writes one "
                "record per BYTES object (LS CloudSinkBucketOptions.validateCommitPolicyForBytesFormat: "
                "flush.count > 1 is not allowed for BYTES)",
            )
    if flush["flush_count"] is not None:
        props["flush.size"] = str(flush["flush_count"])
    elif not raw.get("flush.size"):
        props["flush.size"] = DEFAULT_FLUSH_COUNT
    if flush["flush_size"] is not None:
        props["rotate.size.bytes"] = str(flush["flush_size"])
    elif lenses and not raw.get("rotate.size.bytes"):
        props["rotate.size.bytes"] = LENSES_DEFAULT_FLUSH_SIZE
    if flush["flush_interval"] is not None:
        props["rotate.schedule.interval.ms"] = str(flush["flush_interval"] * 1000)
        if not raw.get("timezone") and not lenses:
            props["timezone"] = "UTC"
    elif lenses and not raw.get("rotate.schedule.interval.ms"):
        props["rotate.schedule.interval.ms"] = LENSES_DEFAULT_FLUSH_INTERVAL_MS
    if lenses:
        props["rotate.schedule.anchor"] = "open"  # LS CommitPolicyConditions.Interval: since the file opened
    if statement.partition_by:
        props["partitioner.class"] = "kcql"
        props["partition.field.name"] = ",".join(statement.partition_by)
        # Lenses' layout: 'partition.include.keys' first, then WITHPARTITIONER, else KeysAndValues (LS
        # config/PartitionDisplay.apply, config/PartitionSelection.apply); Confluent's layout: KCQL's Values
        format_class = props.get("format.class") or raw.get("format.class")
        sidecars = any(str(raw.get(k, "")).strip().lower() == "true" for k in SIDECAR_KEYS)
        lenses_layout = lenses and format_class in ("json", "avro", "parquet", *LENSES_LAYOUT_FORMATS) and not sidecars
        default = "KeysAndValues" if lenses_layout else "Values"
        props["partition.path.style"] = include_keys or statement.partitioner or default
        for name in statement.partition_by if lenses_layout else ():
            if name.startswith(LENSES_DATE_PREFIX):
                lenses_date_printer(name[len(LENSES_DATE_PREFIX) :])  # a pattern Lenses' JVM prints alike
    if lenses and props.get("format.class") == "json":
        props["format.class"] = "lenses_json"  # Lenses' own JSON lines, in Lenses' layout
        props.update(json_compression(raw))
    sidecar_files = any(str(raw.get(k, "")).strip().lower() == "true" for k in SIDECAR_KEYS)
    if lenses and props.get("format.class") in ("avro", "parquet") and not sidecar_files:
        props["format.class"] = "lenses_" + props["format.class"]  # Lenses' records, in Lenses' layout
        props.update(struct_compression(raw, props["format.class"]))
    props[KCQL_KEY] = statement.text
    return props


def check_sink(config: Config) -> None:
    """The checks of a backup configuration of Lenses' sink class: its plain JSON holds no byte arrays; a
    configuration its layout cannot hold is written in Confluent's layout, with a warning saying why."""
    blockers = lenses_layout_blockers(config)
    if not blockers and config["format.class"] == "lenses_json" and not config["store.envelope"]:
        from kafka_s3.core.config.registries import CONVERTERS
        from kafka_s3.core.registry import import_object

        if import_object(CONVERTERS).canonical(config["value.converter"]) == "bytearray":
            raise ConfigError(
                f"value.converter={config['value.converter']}: Lenses' plain JSON (STOREAS JSON without "
                "'store.envelope'=true) cannot hold byte arrays (Lenses' sink refuses them too): set "
                "value.converter to StringConverter or JsonConverter (schemas.enable=false), or add "
                "PROPERTIES('store.envelope'=true)",
                key="value.converter",
            )
    if blockers:
        config.warnings.append(
            f"connector.class={SINK_CLASS}: {', '.join(blockers)} cannot be written in Lenses' layout "
            "(it holds STOREAS JSON, CSV, AVRO, PARQUET, TEXT or BYTES): the backup writes Confluent's layout "
            "(<prefix>/<topic>/<directories>/<topic>+<partition>+<offset><ext>) and kafka-s3's own objects"
        )


def _statement_raw(raw: Mapping[str, Any], statement: Statement) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "topics.regex"}
    if raw.get("connector.class") == SOURCE_CLASS:
        out.update(source_properties(statement, raw))
    else:
        props = sink_properties(statement, raw)
        out.update(props)
        if props.get("format.class") in ("lenses_json", *LENSES_STRUCT_CODECS):  # read into the format's codec
            for key in (COMPRESSION_CODEC_KEY, COMPRESSION_LEVEL_KEY):
                out.pop(key, None)
    return out


def split_statements(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One raw configuration per KCQL statement (each with that statement alone in ``connect.s3.kcql``); ``[raw]``
    when ``connect.s3.kcql`` is not set."""
    text = raw.get(KCQL_KEY)
    if not text or not str(text).strip():
        return [dict(raw)]
    return [_statement_raw(raw, statement) for statement in parse(str(text))]


def expand(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The parse-time rewrite (a :class:`~kafka_s3.core.config.model.ConfigDef` preprocessor): a single statement
    becomes properties; several need :func:`split_statements` (``kafka_s3.core.config.loader.load_all``), which runs
    each apart."""
    configs = split_statements(raw)
    if len(configs) > 1:
        raise ConfigError(
            f"{KCQL_KEY}: {len(configs)} statements where one configuration takes one. The kafka-s3 commands run "
            "every statement of a file (kafka_s3.core.config.loader.load_all splits them)",
            key=KCQL_KEY,
        )
    return configs[0]


#: ``connect.s3.kcql``: its statements expanded into properties before anything is parsed (:func:`expand`)
CONFIG = ConfigDef("kcql", preprocessors=[expand]).define(
    Prop(
        KCQL_KEY,
        Type.STRING,
        "",
        "Lenses' KCQL: INSERT INTO bucket:prefix SELECT * FROM topic [PARTITIONBY f1, _key, _header.h] "
        "[STOREAS AVRO|PARQUET|JSON|TEXT|BYTES|CSV|CSV_WITHHEADERS] [WITHPARTITIONER KeysAndValues|Values] "
        "[WITH_FLUSH_SIZE bytes] "
        "[WITH_FLUSH_INTERVAL seconds] [WITH_FLUSH_COUNT records] [PROPERTIES('flush.count'=n, 'flush.size'=bytes, "
        "'flush.interval'=seconds)], statements separated by ';'. Each statement sets "
        "s3.bucket.name, topics.dir, topics, format.class, partitioner.class=kcql, partition.field.name, "
        "partition.path.style, flush.size (default 50000), rotate.size.bytes and rotate.schedule.interval.ms (with "
        "timezone UTC; under Lenses' sink class Lenses' defaults 500000000 bytes and 3600 s, counted from the chunk's "
        "opening: rotate.schedule.anchor=open), over the file's values; several statements run as one backup. "
        "With connector.class="
        f"{SOURCE_CLASS} a statement restores Lenses' objects: "
        "INSERT INTO topic SELECT * FROM bucket:prefix STOREAS JSON [PROPERTIES('store.envelope'=true)] restores every "
        "topic under bucket:prefix into topic.",
        Importance.MEDIUM,
        "KCQL",
        origin="kafka-s3",
    ),
)
