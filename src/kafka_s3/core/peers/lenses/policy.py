"""Lenses' rules, as its sink and source apply them: its connector classes, its defaults, which configurations its
layout holds, how its names are padded, its compression codecs, its ``PARTITIONBY _date.<pattern>`` directories and
its envelope properties (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``).

The KCQL translation (:mod:`kafka_s3.core.peers.lenses.config`) applies them to a statement; the layout
(:mod:`~kafka_s3.core.peers.lenses.layout`: padding) and the PARTITIONBY partitioner
(:mod:`~kafka_s3.core.peers.lenses.partitioner`: which layout, padding, date patterns) apply them to a parsed
configuration. Errors are :class:`~kafka_s3.core.errors.ConfigError` naming the key (or the KCQL token) at fault.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.java_time import Printer, compile_java_pattern
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY, Token, error, parse

#: Lenses' S3 sink connector: its statements back up into Lenses' own layout where it can hold them
#: (:func:`lenses_layout_blockers`), else into Confluent's
SINK_CLASS = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
#: Lenses' S3 source connector: its statements read a bucket into a topic (``INSERT INTO topic SELECT * FROM
#: bucket:prefix``)
SOURCE_CLASS = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
#: Lenses' sink defaults for ``flush.size`` (bytes) and ``flush.interval`` (LS ``sink/config/FlushSettings``:
#: ``defaultFlushSize = 500000000L``, ``defaultFlushInterval = 3600.seconds``), applied under Lenses' sink class
LENSES_DEFAULT_FLUSH_SIZE = "500000000"
LENSES_DEFAULT_FLUSH_INTERVAL_MS = "3600000"
#: Lenses' compression setting (LS ``config/CompressionCodecSettings``), read by sink and source statements
COMPRESSION_CODEC_KEY = "connect.s3.compression.codec"
#: Lenses' compression level (LS ``config/CompressionCodecSettings``), read by sink statements
COMPRESSION_LEVEL_KEY = "connect.s3.compression.level"
#: PROPERTIES of a Lenses sink statement about its envelope (LS ``config/DataStorageSettings``: all default true but
#: ``store.envelope``); the ``fields`` flags are accepted when true, the only envelope kafka-s3 writes
LENSES_ENVELOPE_PROPERTIES = (
    "store.envelope",
    "store.envelope.fields.key",
    "store.envelope.fields.value",
    "store.envelope.fields.headers",
    "store.envelope.fields.metadata",
)
#: Lenses' date field of PARTITIONBY: ``_date.<DateTimeFormatter pattern>`` (LS ``config/PartitionSpecifier.Date``)
LENSES_DATE_PREFIX = "_date."
#: PROPERTIES of a Lenses sink statement padding the numbers of its names (LS ``config/padding/PaddingService``)
PADDING_PREFIX = "padding."
#: what Lenses pads without ``padding.*`` PROPERTIES: offsets, to 12 digits (``PaddingService.DefaultPadFields``)
DEFAULT_PADDING = {"offset": 12}
#: keys/headers sidecars, which Lenses' layout does not hold
SIDECAR_KEYS = ("store.kafka.keys", "store.kafka.headers")
#: formats Lenses' layout is written in (format.class after the statement's STOREAS)
LENSES_LAYOUT_FORMATS = (
    "lenses_json",
    "csv",
    "csv_withheaders",
    "lenses_avro",
    "lenses_parquet",
    "lenses_text",
    "lenses_bytes",
)
#: ``connect.s3.compression.codec`` of a Lenses sink statement's Avro and Parquet objects → avro.codec /
#: parquet.codec (LS ``formats/writer/AvroFormatWriter``, ``ParquetFormatWriter``; default UNCOMPRESSED)
LENSES_STRUCT_CODECS = {
    "lenses_avro": {
        "UNCOMPRESSED": "null",
        "SNAPPY": "snappy",
        "BZIP2": "bzip2",
        "DEFLATE": "deflate",
        "XZ": "xz",
        "ZSTD": "zstandard",
    },
    "lenses_parquet": {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd"},
}


def lenses_date_printer(pattern: str) -> Printer:
    """The printer of a ``PARTITIONBY _date.<pattern>`` directory (LS ``sink/config/PartitionField
    .DatePartitionField``: ``DateTimeFormatter.ofPattern``), or a :class:`ConfigError` on ``connect.s3.kcql`` naming
    the pattern letter kafka-s3 cannot print as Lenses' JVM does (:mod:`kafka_s3.core.java_time`). A ``.`` in the
    pattern is refused as Lenses refuses it: ``PartitionFieldSplitter.split`` cuts the field there, and
    ``PartitionField.apply`` wants "only one format ... for date"."""
    owner = f"{KCQL_KEY}: PARTITIONBY {LENSES_DATE_PREFIX}"
    if "." in pattern:
        raise ConfigError(
            f"{owner}{pattern}: a date pattern cannot hold '.': Lenses splits PARTITIONBY fields at '.' and refuses "
            "it too ('only one format should be provided for date')",
            key=KCQL_KEY,
        )
    return compile_java_pattern(pattern, owner)


def lenses_padding(config: Mapping[str, Any]) -> dict[str, int]:
    """The widths Lenses pads the numbers of its names to, by field (``offset``, ``partition``), from the statement's
    ``padding.*`` PROPERTIES (LS ``config/padding/PaddingService``); a field not listed is not padded."""
    text = str(config.get(KCQL_KEY) or "")
    if config.get("connector.class") != SINK_CLASS or not text.strip():
        return dict(DEFAULT_PADDING)
    return padding_widths(parse(text)[0].options)


def padding_widths(options: tuple[tuple[str, str, Token], ...]) -> dict[str, int]:
    """LS ``PaddingService.KcqlPropsPaddingConfigDetector``: with any ``padding.*`` key, ``padding.length.<field>``
    (all of them, replacing the default ``offset`` 12), ``padding.char`` (default ``0``) and ``padding.type``
    (default ``LeftPad``; ``NoOp`` pads nothing). Only what kafka-s3 reads back is accepted: left padding with
    ``0``."""
    padding = {k: (v, t) for k, v, t in options if k.startswith(PADDING_PREFIX)}
    if not padding:
        return dict(DEFAULT_PADDING)
    widths: dict[str, int] = {}
    for key, (value, token) in padding.items():
        if key.startswith(PADDING_PREFIX + "length."):
            if not value.isdigit():
                raise error(token, f"PROPERTIES {key!r} must be a whole number, found {value!r}")
            widths[key[len(PADDING_PREFIX + "length.") :]] = int(value)
        elif key == PADDING_PREFIX + "char":
            if value != "0":
                raise error(token, f"PROPERTIES {key!r}={value!r}: kafka-s3 reads back names padded with '0' only")
        elif key == PADDING_PREFIX + "type":
            if value.lower() not in ("leftpad", "noop"):
                raise error(
                    token,
                    f"PROPERTIES {key!r}={value!r}: kafka-s3 writes LeftPad or NoOp (RightPad names cannot be read "
                    "back)",
                )
            if value.lower() == "noop":
                return {}
        else:
            raise error(
                token, f"PROPERTIES key {key!r} is not supported (padding.length.<field>, padding.char, padding.type)"
            )
    return widths or dict(DEFAULT_PADDING)


def json_compression(raw: Mapping[str, Any]) -> dict[str, str]:
    """``connect.s3.compression.codec``/``.level`` of Lenses' JSON/CSV objects: UNCOMPRESSED (the default) or GZIP,
    one gzip stream per object named ``.gz`` (LS ``formats/writer/JsonFormatWriter``: other codecs are refused there
    too; level 6 by default)."""
    codec = str(raw.get(COMPRESSION_CODEC_KEY) or "").strip().upper()
    if codec in ("", "UNCOMPRESSED"):
        return {}
    if codec != "GZIP":
        raise ConfigError(
            f"{COMPRESSION_CODEC_KEY}={codec}: Lenses' JSON objects are UNCOMPRESSED or GZIP (LS JsonFormatWriter)",
            key=COMPRESSION_CODEC_KEY,
        )
    props = {"s3.compression.type": "gzip"}
    level = str(raw.get(COMPRESSION_LEVEL_KEY) or "").strip()
    if level:
        if not level.lstrip("-").isdigit() or not -1 <= int(level) <= 9:
            raise ConfigError(
                f"{COMPRESSION_LEVEL_KEY}={level}: a gzip level is -1 (default, 6) or 0-9", key=COMPRESSION_LEVEL_KEY
            )
        props["s3.compression.level"] = level
    return props


def struct_compression(raw: Mapping[str, Any], format_class: str) -> dict[str, str]:
    """``connect.s3.compression.codec``/``.level`` of Lenses' Avro/Parquet objects as avro.codec (and its deflate
    level) or parquet.codec; Lenses requires a level for DEFLATE, XZ and ZSTD (LS ``AvroFormatWriter``)."""
    codecs = LENSES_STRUCT_CODECS[format_class]
    key = "avro.codec" if format_class == "lenses_avro" else "parquet.codec"
    if not raw.get(COMPRESSION_CODEC_KEY) and raw.get(key):
        return {}  # read already (a statement's properties are expanded again when parsed), or set in the file
    codec = str(raw.get(COMPRESSION_CODEC_KEY) or "UNCOMPRESSED").strip().upper()
    if codec not in codecs:
        raise ConfigError(
            f"{COMPRESSION_CODEC_KEY}={codec}: Lenses' {format_class[7:].title()} objects are written by kafka-s3 with "
            f"{', '.join(codecs)}",
            key=COMPRESSION_CODEC_KEY,
        )
    props = {key: codecs[codec]}
    level = str(raw.get(COMPRESSION_LEVEL_KEY) or "").strip()
    if format_class == "lenses_avro" and codec in ("DEFLATE", "XZ", "ZSTD"):
        if not level or level == "-1":
            raise ConfigError(
                f"{COMPRESSION_CODEC_KEY}={codec} needs {COMPRESSION_LEVEL_KEY} (Lenses' AvroFormatWriter refuses it "
                "without a level)",
                key=COMPRESSION_LEVEL_KEY,
            )
        if codec == "DEFLATE":
            if not level.isdigit() or not 0 <= int(level) <= 9:
                raise ConfigError(f"{COMPRESSION_LEVEL_KEY}={level}: a deflate level is 0-9", key=COMPRESSION_LEVEL_KEY)
            props["avro.deflate.level"] = level
    return props


def envelope_property(key: str, value: str, token: Token) -> dict[str, str]:
    """``store.envelope`` (true/false) or a ``store.envelope.fields.*`` flag (only true is written)."""
    if value.lower() not in ("true", "false"):
        raise error(token, f"PROPERTIES {key!r} must be true or false, found {value!r}")
    if key == "store.envelope":
        return {"store.envelope": value.lower()}
    if value.lower() != "true":
        raise error(
            token,
            f"PROPERTIES {key!r}=false is not supported: kafka-s3 writes Lenses' envelope with all of its fields "
            "(key, value, headers, metadata)",
        )
    return {}


def lenses_layout_blockers(config: Mapping[str, Any]) -> list[str]:
    """Why a backup configuration is not written in Lenses' layout (empty: it is). Lenses' layout is written for
    Lenses' sink class (with or without PARTITIONBY), STOREAS JSON (``lenses_json``), AVRO (``lenses_avro``),
    PARQUET (``lenses_parquet``), CSV, TEXT or BYTES, and no keys/headers sidecars."""
    if config.get("connector.class") != SINK_CLASS:
        return ["connector.class is not Lenses' S3 sink"]
    blockers = []
    statement = str(config.get(KCQL_KEY) or "")
    if config.get("partitioner.class", "default") not in ("default", "kcql"):
        blockers.append("PARTITIONBY" if statement else f"partitioner.class={config.get('partitioner.class')}")
    if config.get("format.class") not in LENSES_LAYOUT_FORMATS:
        store_as = re.search(r"STOREAS\s*=?\s*`?([A-Za-z_]+)", statement, re.IGNORECASE)
        blockers.append(
            f"STOREAS {store_as.group(1).upper()}" if store_as else f"format.class={config.get('format.class')}"
        )
    for sidecar in SIDECAR_KEYS:
        if config.get(sidecar):
            blockers.append(f"{sidecar}=true")
    return blockers
