"""KCQL, the SQL-like configuration of Lenses' S3 sink (``connect.s3.kcql``), turned into ordinary properties.

One or more statements, separated by ``;``::

    INSERT INTO bucket:prefix SELECT * FROM topic
        [PARTITIONBY field[, field...]] [STOREAS format] [WITHPARTITIONER KeysAndValues|Values]
        [WITH_FLUSH_SIZE bytes] [WITH_FLUSH_INTERVAL seconds] [WITH_FLUSH_COUNT records]

Keywords are case-insensitive. Any name can be back-quoted (`` `AVRO` ``, `` `my topic` ``). ``=`` may come before a
clause's value (``WITH_FLUSH_COUNT = 5000``). The optional clauses may come in any order, each at most once. Each
statement becomes the properties a properties file would give:

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
under Lenses' sink class, where :func:`lenses_layout_blockers` says when Lenses' own layout is written (there
``STOREAS JSON``, ``AVRO`` and ``PARQUET`` become Lenses' own formats: ``lenses_json``, ``lenses_avro``,
``lenses_parquet``, with ``connect.s3.compression.codec`` read into their codec). A
statement's settings win over the file's; the file supplies everything else (converters, credentials, ``name``...).
The statements of one file run as one backup (see :mod:`kafka_s3.pipelines.backup.group`): they share the consumer group
``connect-<name>``, so one topic may appear in only one statement.

Errors are :class:`~kafka_s3.core.errors.ConfigError` naming ``connect.s3.kcql`` and the line and column of the token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.java_time import Printer, compile_java_pattern

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

KCQL_KEY = "connect.s3.kcql"
DEFAULT_FLUSH_COUNT = "50000"
#: Lenses' sink defaults for ``flush.size`` (bytes) and ``flush.interval`` (LS ``sink/config/FlushSettings``:
#: ``defaultFlushSize = 500000000L``, ``defaultFlushInterval = 3600.seconds``), applied under Lenses' sink class
LENSES_DEFAULT_FLUSH_SIZE = "500000000"
LENSES_DEFAULT_FLUSH_INTERVAL_MS = "3600000"
STORE_AS = {
    "AVRO": "avro",
    "PARQUET": "parquet",
    "JSON": "json",
    "TEXT": "bytearray",
    "BYTES": "bytearray",
    "CSV": "csv",
    "CSV_WITHHEADERS": "csv_withheaders",
}
PARTITIONER_STYLES = ("KeysAndValues", "Values")
NUMBER_CLAUSES = {
    "WITH_FLUSH_SIZE": "flush_size",
    "WITH_FLUSH_INTERVAL": "flush_interval",
    "WITH_FLUSH_COUNT": "flush_count",
}
CLAUSES = ("PARTITIONBY", "STOREAS", "WITHPARTITIONER", "PROPERTIES", *NUMBER_CLAUSES)
#: ``PROPERTIES('flush.count'=n, ...)`` of a sink statement (Lenses ≥7.0 replaced WITH_FLUSH_* with them)
SINK_PROPERTIES = {"flush.count": "flush_count", "flush.size": "flush_size", "flush.interval": "flush_interval"}
#: Lenses' S3 source connector: its statements read a bucket into a topic (``INSERT INTO topic SELECT * FROM
#: bucket:prefix``)
LENSES_SOURCE_CLASS = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
#: Lenses' compression setting (LS ``config/CompressionCodecSettings``), read by sink and source statements
COMPRESSION_CODEC_KEY = "connect.s3.compression.codec"
#: Lenses' compression level (LS ``config/CompressionCodecSettings``), read by sink statements
COMPRESSION_LEVEL_KEY = "connect.s3.compression.level"
#: Lenses' S3 sink connector: its statements back up into Lenses' own layout where it can hold them
#: (:func:`lenses_layout_blockers`), else into Confluent's
LENSES_SINK_CLASS = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
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
#: PROPERTIES of a Lenses sink statement naming its PARTITIONBY directories ``name=value`` (true) or ``value`` (false)
INCLUDE_KEYS = "partition.include.keys"
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
#: STOREAS TEXT/BYTES of a Lenses sink or source statement → Lenses' own TEXT/BYTES objects (``formats/lenses_text``)
LENSES_PLAIN = {"TEXT": "lenses_text", "BYTES": "lenses_bytes"}
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

_WORD = re.compile(r"[A-Za-z0-9_.\-/]+")
_PUNCTUATION = ":,*=;()"


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "quoted" (back-quoted), "string" (single-quoted), a punctuation character, or "end"
    text: str
    index: int  # character index in the KCQL text
    line: int
    column: int

    @property
    def shown(self) -> str:
        if self.kind == "end":
            return "the end of the statement"
        if self.kind == "string":
            return f"'{self.text}'"
        return f"`{self.text}`" if self.kind == "quoted" else repr(self.text)

    def is_keyword(self, keyword: str) -> bool:
        return self.kind == "word" and self.text.upper() == keyword


def error(token: Token, problem: str) -> ConfigError:
    return ConfigError(
        f"{KCQL_KEY}: {problem} at line {token.line}, column {token.column} (character {token.index})", key=KCQL_KEY
    )


def tokens(text: str) -> Iterator[Token]:
    """Words, back-quoted names and punctuation, with their positions; an ``end`` token last."""
    index, line, line_start = 0, 1, 0
    while index < len(text):
        char = text[index]
        column = index - line_start + 1
        if char == "\n":
            index, line, line_start = index + 1, line + 1, index + 1
        elif char.isspace():
            index += 1
        elif char == "`":
            close = text.find("`", index + 1)
            if close < 0:
                raise error(Token("`", "`", index, line, column), "unclosed back-quote")
            name = text[index + 1 : close]
            if "\n" in name or not name:
                raise error(Token("`", "`", index, line, column), "a back-quoted name must be non-empty, on one line")
            yield Token("quoted", name, index, line, column)
            index = close + 1
        elif char == "'":
            close = text.find("'", index + 1)
            if close < 0:
                raise error(Token("'", "'", index, line, column), "unclosed quote")
            yield Token("string", text[index + 1 : close], index, line, column)
            line += text.count("\n", index, close)
            index = close + 1
        elif char in _PUNCTUATION:
            yield Token(char, char, index, line, column)
            index += 1
        else:
            match = _WORD.match(text, index)
            if not match:
                raise error(Token("?", char, index, line, column), f"unexpected character {char!r}")
            yield Token("word", match.group(), index, line, column)
            index = match.end()
    yield Token("end", "", index, line, index - line_start + 1)


@dataclass(frozen=True)
class Statement:
    """One ``INSERT INTO ... SELECT * FROM ...`` statement."""

    text: str
    bucket: str
    prefix: str | None
    topic: str
    topic_token: Token
    partition_by: tuple[str, ...] = ()
    store_as: str | None = None  # format.class
    partitioner: str | None = None  # KeysAndValues | Values
    flush_size: int | None = None
    flush_interval: int | None = None
    flush_count: int | None = None
    from_prefix: str | None = None  # ``FROM bucket:prefix`` (source statements)
    store_as_name: str | None = None  # STOREAS as written
    options: tuple[tuple[str, str, Token], ...] = ()  # PROPERTIES('key'=value, ...)

    def source_properties(self, raw: Mapping[str, Any]) -> dict[str, str]:
        """The properties of a Lenses *source* statement: ``INSERT INTO topic SELECT * FROM bucket:prefix STOREAS JSON
        [PROPERTIES('store.envelope'=true)]`` restores every topic found under ``bucket:prefix`` into ``topic``."""
        target, bucket = self.bucket, self.topic
        props = {"s3.bucket.name": bucket, "topics.dir": self.from_prefix or ""}
        store_as = (self.store_as_name or "").upper()
        if store_as not in SOURCE_STORE_AS:
            raise error(
                self.topic_token,
                f"STOREAS {self.store_as_name or '(none)'}: restoring Lenses' objects supports STOREAS "
                f"{', '.join(SOURCE_STORE_AS)}",
            )
        props["format.class"] = SOURCE_STORE_AS[store_as]
        props["store.envelope"] = "false"
        if store_as not in ("AVRO", "PARQUET", *LENSES_PLAIN):  # Avro/Parquet: codec inside the object, read any
            props.update(_lenses_compression(raw))
        codec = str(raw.get(COMPRESSION_CODEC_KEY) or "UNCOMPRESSED").strip().upper()
        if store_as in LENSES_PLAIN and codec != "UNCOMPRESSED":
            raise ConfigError(
                f"{COMPRESSION_CODEC_KEY}={codec}: Lenses' STOREAS {store_as} objects are not compressed (LS "
                "FormatSelection: UNCOMPRESSED only)",
                key=COMPRESSION_CODEC_KEY,
            )
        for key, value, token in self.options:
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
        props[KCQL_KEY] = self.text
        return props

    def properties(self, raw: Mapping[str, Any]) -> dict[str, str]:
        """The properties this statement sets, given the file's other settings ``raw``."""
        if self.from_prefix is not None:
            raise error(
                self.topic_token,
                f"FROM {self.topic}:{self.from_prefix} reads a bucket: that is a source statement (set "
                f"connector.class={LENSES_SOURCE_CLASS} to restore), a sink statement reads FROM a topic",
            )
        props = {"s3.bucket.name": self.bucket, "topics.dir": self.prefix or "", "topics": self.topic}
        lenses = raw.get("connector.class") == LENSES_SINK_CLASS
        if self.store_as:
            props["format.class"] = self.store_as
            if lenses and (self.store_as_name or "").upper() in LENSES_PLAIN:
                props["format.class"] = LENSES_PLAIN[(self.store_as_name or "").upper()]
        elif lenses and not raw.get("format.class"):
            props["format.class"] = "json"  # LS config/FormatSelection.fromKcql: no STOREAS is JSON
        elif not raw.get("format.class"):
            raise error(
                self.topic_token,
                f"the statement for topic {self.topic!r} has no STOREAS and format.class is "
                "not set: add e.g. STOREAS JSON",
            )
        flush = {"flush_count": self.flush_count, "flush_size": self.flush_size, "flush_interval": self.flush_interval}
        supported = [*SINK_PROPERTIES, *((*LENSES_ENVELOPE_PROPERTIES, INCLUDE_KEYS) if lenses else ())]
        include_keys: str | None = None
        for key, value, token in self.options:
            if lenses and key in LENSES_ENVELOPE_PROPERTIES:
                props.update(_envelope_property(key, value, token))
                continue
            if lenses and key.startswith(PADDING_PREFIX):
                continue  # checked by _padding below
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
            _padding(self.options)
            if props.get("format.class") == "lenses_bytes" and flush["flush_count"] != 1:
                raise error(
                    self.topic_token,
                    f"STOREAS BYTES for topic {self.topic!r} needs PROPERTIES('flush.count'=1): Lenses writes one "
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
        if self.partition_by:
            props["partitioner.class"] = "kcql"
            props["partition.field.name"] = ",".join(self.partition_by)
            # Lenses' layout: 'partition.include.keys' first, then WITHPARTITIONER, else KeysAndValues (LS
            # config/PartitionDisplay.apply, config/PartitionSelection.apply); Confluent's layout: KCQL's Values
            format_class = props.get("format.class") or raw.get("format.class")
            sidecars = any(str(raw.get(k, "")).strip().lower() == "true" for k in SIDECAR_KEYS)
            lenses_layout = (
                lenses and format_class in ("json", "avro", "parquet", *LENSES_LAYOUT_FORMATS) and not sidecars
            )
            default = "KeysAndValues" if lenses_layout else "Values"
            props["partition.path.style"] = include_keys or self.partitioner or default
            for name in self.partition_by if lenses_layout else ():
                if name.startswith(LENSES_DATE_PREFIX):
                    lenses_date_printer(name[len(LENSES_DATE_PREFIX) :])  # a pattern Lenses' JVM prints alike
        if lenses and props.get("format.class") == "json":
            props["format.class"] = "lenses_json"  # Lenses' own JSON lines, in Lenses' layout
            props.update(_lenses_compression(raw))
        sidecar_files = any(str(raw.get(k, "")).strip().lower() == "true" for k in SIDECAR_KEYS)
        if lenses and props.get("format.class") in ("avro", "parquet") and not sidecar_files:
            props["format.class"] = "lenses_" + props["format.class"]  # Lenses' records, in Lenses' layout
            props.update(_lenses_struct_compression(raw, props["format.class"]))
        props[KCQL_KEY] = self.text
        return props


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
    if config.get("connector.class") != LENSES_SINK_CLASS or not text.strip():
        return dict(DEFAULT_PADDING)
    return _padding(parse(text)[0].options)


def _padding(options: tuple[tuple[str, str, Token], ...]) -> dict[str, int]:
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


def _lenses_compression(raw: Mapping[str, Any]) -> dict[str, str]:
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


def _lenses_struct_compression(raw: Mapping[str, Any], format_class: str) -> dict[str, str]:
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


def _envelope_property(key: str, value: str, token: Token) -> dict[str, str]:
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
    if config.get("connector.class") != LENSES_SINK_CLASS:
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
            f"connector.class={LENSES_SINK_CLASS}: {', '.join(blockers)} cannot be written in Lenses' layout "
            "(it holds STOREAS JSON, CSV, AVRO, PARQUET, TEXT or BYTES): the backup writes Confluent's layout "
            "(<prefix>/<topic>/<directories>/<topic>+<partition>+<offset><ext>) and kafka-s3's own objects"
        )


@dataclass
class _Parser:
    source: str
    stream: list[Token] = field(default_factory=list)
    at: int = 0

    def __post_init__(self) -> None:
        self.stream = list(tokens(self.source))

    @property
    def token(self) -> Token:
        return self.stream[self.at]

    def advance(self) -> Token:
        token = self.token
        if token.kind != "end":
            self.at += 1
        return token

    def keyword(self, keyword: str, context: str = "") -> Token:
        if not self.token.is_keyword(keyword):
            raise error(self.token, f"expected {keyword}{context}, found {self.token.shown}")
        return self.advance()

    def punctuation(self, char: str) -> bool:
        if self.token.kind == char:
            self.advance()
            return True
        return False

    def name(self, what: str) -> Token:
        if self.token.kind not in ("word", "quoted"):
            raise error(self.token, f"expected {what}, found {self.token.shown}")
        return self.advance()

    def statements(self) -> list[Statement]:
        found: list[Statement] = []
        while True:
            while self.punctuation(";"):
                pass
            if self.token.kind == "end":
                return found
            found.append(self.statement())

    def statement(self) -> Statement:
        first = self.keyword("INSERT", " (statements are INSERT INTO bucket:prefix SELECT * FROM topic ...)")
        self.keyword("INTO", " after INSERT")
        bucket = self.name("a bucket name after INSERT INTO").text
        prefix = None
        if self.punctuation(":"):
            prefix = self.name("a path prefix after 'bucket:'").text.strip("/")
        self.keyword("SELECT", " after INSERT INTO bucket:prefix")
        if not self.punctuation("*"):
            raise error(self.token, f"only SELECT * is supported, found {self.token.shown}")
        self.keyword("FROM", " after SELECT *")
        topic_token = self.name("a topic name after FROM")
        values: dict[str, Any] = {}
        if self.punctuation(":"):
            values["from_prefix"] = self.name("a path prefix after 'FROM bucket:'").text.strip("/")
        seen: dict[str, Token] = {}
        while self.token.kind not in (";", "end"):
            token = self.token
            clause = token.text.upper() if token.kind == "word" else ""
            if clause not in CLAUSES:
                raise error(token, f"expected one of {', '.join(CLAUSES)}, ';' or the end, found {token.shown}")
            if clause in seen:
                previous = seen[clause]
                raise error(token, f"{clause} appears twice (first at line {previous.line}, column {previous.column})")
            seen[clause] = self.advance()
            if clause == "PARTITIONBY":
                values["partition_by"] = self.partition_fields()
            elif clause == "STOREAS":
                values["store_as_token"] = self.store_as_token()
            elif clause == "PROPERTIES":
                values["options"] = self.options()
            elif clause == "WITHPARTITIONER":
                values["partitioner"] = self.partitioner_style()
            else:
                values[NUMBER_CLAUSES[clause]] = self.number(clause)
        if "WITHPARTITIONER" in seen and "PARTITIONBY" not in seen:
            raise error(seen["WITHPARTITIONER"], "WITHPARTITIONER needs a PARTITIONBY clause")
        end = self.token.index
        store_as_token = values.pop("store_as_token", None)
        if store_as_token is not None:
            values["store_as_name"] = store_as_token.text
            if "from_prefix" not in values:  # a sink statement: a format kafka-s3 writes
                values["store_as"] = resolve_store_as(store_as_token)
        return Statement(
            self.source[first.index : end].strip(), bucket, prefix, topic_token.text, topic_token, **values
        )

    def options(self) -> tuple[tuple[str, str, Token], ...]:
        if not self.punctuation("("):
            raise error(self.token, f"expected '(' after PROPERTIES, found {self.token.shown}")
        found: list[tuple[str, str, Token]] = []
        while True:
            token = self.token
            if token.kind not in ("string", "word", "quoted"):
                raise error(token, f"expected a 'key' in PROPERTIES, found {token.shown}")
            self.advance()
            if not self.punctuation("="):
                raise error(self.token, f"expected '=' after {token.shown} in PROPERTIES, found {self.token.shown}")
            value = self.token
            if value.kind not in ("string", "word", "quoted"):
                raise error(value, f"expected a value for {token.shown} in PROPERTIES, found {value.shown}")
            self.advance()
            if any(key == token.text for key, _, _ in found):
                raise error(token, f"PROPERTIES key {token.shown} appears twice")
            found.append((token.text, value.text, token))
            if not self.punctuation(","):
                break
        if not self.punctuation(")"):
            raise error(self.token, f"expected ')' after the PROPERTIES, found {self.token.shown}")
        return tuple(found)

    def partition_fields(self) -> tuple[str, ...]:
        parenthesised = self.punctuation("(")
        names = []
        while True:
            token = self.name("a field name (value field, _key or _header.<name>)")
            if "," in token.text:
                raise error(token, "a partition field name cannot contain ','")
            if token.text.lower().startswith("_header.") and len(token.text) == len("_header."):
                raise error(token, "_header. needs a header name")
            names.append(token.text)
            if not self.punctuation(","):
                break
        if parenthesised and not self.punctuation(")"):
            raise error(self.token, f"expected ')' after the PARTITIONBY fields, found {self.token.shown}")
        return tuple(names)

    def store_as_token(self) -> Token:
        self.punctuation("=")
        return self.name("a storage format after STOREAS (AVRO, PARQUET, JSON, TEXT, BYTES)")

    def partitioner_style(self) -> str:
        self.punctuation("=")
        token = self.name("KeysAndValues or Values after WITHPARTITIONER")
        for style in PARTITIONER_STYLES:
            if token.text.lower() == style.lower():
                return style
        raise error(token, f"WITHPARTITIONER must be KeysAndValues or Values, found {token.shown}")

    def number(self, clause: str) -> int:
        self.punctuation("=")
        token = self.token
        if token.kind != "word" or not token.text.isdigit() or int(token.text) <= 0:
            raise error(token, f"expected a positive whole number after {clause}, found {token.shown}")
        self.advance()
        return int(token.text)


def resolve_store_as(token: Token) -> str:
    """A sink statement's STOREAS as ``format.class``."""
    known = STORE_AS.get(token.text.upper())
    if known:
        return known
    from kafka_s3.core.config.registries import FORMATS
    from kafka_s3.core.registry import import_object

    try:
        canonical: str = import_object(FORMATS).canonical(token.text)
        return canonical
    except ConfigError:
        raise error(
            token,
            f"STOREAS {token.text} is not a format kafka-s3 writes (AVRO, PARQUET, JSON, TEXT, BYTES, "
            "or a kafka-s3 format name such as block_gzip)",
        ) from None


def parse(text: str) -> list[Statement]:
    """Every statement of a ``connect.s3.kcql`` value, checked (one topic per statement, each topic once)."""
    statements = _Parser(text).statements()
    if not statements:
        raise error(Token("end", "", 0, 1, 1), "no statement (expected INSERT INTO bucket:prefix SELECT * FROM topic)")
    seen: dict[str, Statement] = {}
    for statement in statements:
        if statement.topic in seen:
            first = seen[statement.topic].topic_token
            raise error(
                statement.topic_token,
                f"topic {statement.topic!r} is already read by the statement at line {first.line}, column "
                f"{first.column}: the statements share one consumer group, which keeps one position per partition",
            )
        seen[statement.topic] = statement
    return statements


def _statement_raw(raw: Mapping[str, Any], statement: Statement) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "topics.regex"}
    if raw.get("connector.class") == LENSES_SOURCE_CLASS:
        out.update(statement.source_properties(raw))
    else:
        props = statement.properties(raw)
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
