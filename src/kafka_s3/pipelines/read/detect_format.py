"""What a backup was written with, found in the bucket: ``format.class`` (with its compression), the sidecars'
formats and ``store.envelope`` — so that a read, a verify or ``spark.read.format("kafka-s3").load(path)`` needs no
configuration of them, and a setting that contradicts the bucket is an error before anything is read.

Names tell the format: every data object and sidecar ends in its format's extension (Confluent's names,
``<topic>+<partition>+<offset><ext>``, and kafka-s3's own, whose chunk manifests live in one tree per extension,
``_kafka-s3/<ext>/``). The names come from the listing the layout detection makes anyway
(:func:`kafka_s3.pipelines.read.layouts.detected`). Whether the objects hold whole records (an envelope) is in the
objects only: the first data object's Parquet footer, Avro header or first JSON line tells it, read with one ranged
GET on the driver.

A prefix holding objects of several formats (a topic's format changed between runs) is read only with
``format.class`` naming one of them: without it, the error lists each format with one of its objects.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.compression import SUFFIXES
from kafka_s3.core.layout import SIDE_SUFFIXES, Layout
from kafka_s3.core.manifest import MANIFEST_DIR
from kafka_s3.core.store import ObjectInfo, Store

#: How each format kafka-s3 and Confluent write is titled in messages
TITLES = {"json": "JSON", "bytearray": "ByteArray", "avro": "Avro", "parquet": "Parquet", "block_gzip": "Block-GZIP"}
#: Formats whose objects can hold whole records (store.envelope=true)
ENVELOPE_FORMATS = ("json", "avro", "parquet")
#: How much of an object the envelope probe fetches first (a footer, a header, a first line); then at most PROBE_MAX
PROBE_BYTES = 64 * 1024
PROBE_MAX = 1024 * 1024


def _extensions() -> dict[str, dict[str, str]]:
    """Every data extension kafka-s3's formats write with their default names, and the settings that give it."""
    from kafka_s3.core.formats.parquet import EXTENSIONS as PARQUET

    table: dict[str, dict[str, str]] = {".avro": {"format.class": "avro"}, ".gz": {"format.class": "block_gzip"}}
    for codec, extension in PARQUET.items():
        table[extension] = {"format.class": "parquet", "parquet.codec": codec}
    for compression, suffix in SUFFIXES.items():
        table[".json" + suffix] = {"format.class": "json", "s3.compression.type": compression}
        table[".bin" + suffix] = {"format.class": "bytearray", "s3.compression.type": compression}
    return table


EXTENSIONS = _extensions()


@dataclass(frozen=True)
class Example:
    """One object of a kind (the smallest key seen, so that messages do not depend on the listing's order)."""

    key: str
    size: int


@dataclass
class Seen:
    """What the names under ``topics.dir`` say, collected key by key from one listing."""

    layout: Layout
    values: dict[str, Example] = field(default_factory=dict)  # data objects by extension
    manifests: dict[str, str] = field(default_factory=dict)  # chunk-manifest trees by the extension they name
    sidecars: dict[str, dict[str, str]] = field(default_factory=lambda: {"keys": {}, "headers": {}})

    def add(self, info: ObjectInfo) -> str:
        """Note one listed object; its key back (so that the listing can go on to the layout detection)."""
        delim = self.layout.directory_delim
        prefix = self.layout.topic_prefix()
        relative = info.key[len(prefix) :] if info.key.startswith(prefix) else info.key
        parts = relative.split(delim)
        if parts[0] == MANIFEST_DIR:
            if len(parts) > 2:
                _keep_smallest(self.manifests, "." + parts[1], info.key)
            return info.key
        extension = self._extension(parts[-1])
        if extension is None or len(parts) < 2:
            return info.key
        side = next((s for s in SIDE_SUFFIXES if extension.startswith(s + ".") or extension == s), None)
        if side is None:
            if extension not in self.values or info.key < self.values[extension].key:
                self.values[extension] = Example(info.key, info.size)
        elif SIDE_SUFFIXES[side] in self.sidecars and extension != side:
            _keep_smallest(self.sidecars[SIDE_SUFFIXES[side]], extension[len(side) :], info.key)
        return info.key

    def _extension(self, filename: str) -> str | None:
        """``.snappy.parquet`` of ``orders+0+0000000000.snappy.parquet``; ``None`` for names not Confluent's."""
        d = self.layout.file_delim
        topic, _, rest = filename.partition(d)
        partition, _, rest = rest.partition(d)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        if not topic or not partition.isdigit() or not digits or not rest[digits:].startswith("."):
            return None
        return rest[digits:]


def _keep_smallest(found: dict[str, str], extension: str, key: str) -> None:
    if extension not in found or key < found[extension]:
        found[extension] = key


@dataclass(frozen=True)
class Found:
    """The settings the bucket gives (typed, for :meth:`Config.replace`) and the data object to probe for an
    envelope (``None``: no object of a format that can hold one)."""

    settings: dict[str, Any]
    probe: Example | None = None
    format_name: str = ""


def describe(extension: str) -> str:
    """``Parquet objects (.snappy.parquet)``."""
    settings = EXTENSIONS[extension]
    return f"{TITLES[settings['format.class']]} objects ({extension})"


def found_formats(config: Config, seen: Seen, where: str) -> Found:
    """The format settings ``seen`` gives, checked against those ``config`` sets (a contradiction is a
    :class:`ConfigError` naming an object of the bucket and the setting). Pure: the caller lists and probes."""
    values = {e: seen.values[e] for e in sorted(seen.values) if e in EXTENSIONS}
    for extension in sorted(seen.manifests):  # objects deleted since (or not uploaded yet): the manifests still say
        if extension in EXTENSIONS and extension not in values:
            values[extension] = Example(seen.manifests[extension], 0)
    given = config["format.class"] or ""
    if given:
        chosen = _agreeing(config, given, values, where)
        if chosen is None:
            return Found({})  # a format of another kind (a peer's, a Python class), or nothing to compare
    else:
        chosen = _only(values, seen, where)
    settings: dict[str, Any] = {}
    for key, value in EXTENSIONS[chosen].items():
        if key != "format.class" and config.is_set(key) and str(config[key]) != value:
            raise ConfigError(
                f"{key}={config[key]}, but {where} holds {describe(chosen)} (e.g. {values[chosen].key}), "
                f"written with {key}={value}: leave {key} out to read what the bucket holds",
                key=key,
            )
        settings[key] = value
    settings.update(_sidecar_formats(config, seen, where))
    probe = values[chosen] if settings["format.class"] in ENVELOPE_FORMATS and chosen in seen.values else None
    return Found(settings, probe, settings["format.class"])


def _agreeing(config: Config, given: str, values: dict[str, Example], where: str) -> str | None:
    """The extension of the objects ``format.class`` (and its compression) names, when the bucket holds them;
    ``None`` when there is nothing to compare (no object of a known format, or a format of another kind)."""
    extension = _configured_extension(config, given)
    if extension not in EXTENSIONS or not values:
        return None
    if extension in values:
        return extension
    same = [e for e in values if EXTENSIONS[e]["format.class"] == given]
    key = next((k for k in EXTENSIONS[same[0]] if k != "format.class"), "format.class") if same else "format.class"
    setting = f"{key}={config[key]}" if key != "format.class" else f"format.class={given}"
    held_text = "; ".join(f"{describe(e)}, e.g. {values[e].key}" for e in values)
    raise ConfigError(
        f"{setting} names {TITLES[given]} objects ending {extension}, but {where} holds {held_text}: leave {key} out "
        "to read what the bucket holds",
        key=key,
    )


def _configured_extension(config: Config, given: str) -> str | None:
    """The extension of the data objects the configuration's format writes (``None``: a format of a peer or a
    Python class this module does not compare)."""
    from kafka_s3.core import formats
    from kafka_s3.core.errors import KafkaS3Error

    if given not in TITLES:
        return None
    try:
        return formats.REGISTRY.resolve(given)(config, "value", None, False).extension
    except KafkaS3Error:
        return None


def _only(values: dict[str, Example], seen: Seen, where: str) -> str:
    """The one format the bucket holds, when format.class is not set."""
    if len(values) == 1:
        return next(iter(values))
    if values:
        held = "; ".join(f"{describe(e)}, e.g. {values[e].key}" for e in values)
        raise ConfigError(
            f"format.class is not set and {where} holds objects of several formats: {held}. Set format.class (and "
            "its compression: parquet.codec, s3.compression.type) to read one of them",
            key="format.class",
        )
    unknown = sorted(e for e in seen.manifests if e not in EXTENSIONS)
    hint = (
        f"; its chunk manifests name objects ending {', '.join(unknown)} (format.class=bytearray with "
        "format.bytearray.extension for those?)"
        if unknown
        else ""
    )
    raise ConfigError(
        f"format.class is not set and nothing under {where} tells the format: it holds no object named as a backup's "
        f"data objects are (<topic>+<partition>+<offset>.json, .avro, .snappy.parquet, ...){hint}. Check "
        "s3.bucket.name and topics.dir, or set format.class",
        key="format.class",
    )


def _sidecar_formats(config: Config, seen: Seen, where: str) -> dict[str, str]:
    """keys.format.class and headers.format.class from the sidecars' names, when they are not set."""
    settings = {}
    for kind, found in seen.sidecars.items():
        key = f"{kind}.format.class"
        formats = {EXTENSIONS[e]["format.class"]: k for e, k in sorted(found.items()) if e in EXTENSIONS}
        if not formats:
            continue
        if config.is_set(key):
            if config[key] in TITLES and config[key] not in formats:
                held = "; ".join(f"{TITLES[f]}, e.g. {k}" for f, k in formats.items())
                raise ConfigError(
                    f"{key}={config[key]}, but the {kind} sidecars under {where} are {held}: leave {key} out to read "
                    "what the bucket holds",
                    key=key,
                )
        elif len(formats) == 1:
            settings[key] = next(iter(formats))
    return settings


def with_envelope(config: Config, envelope: bool | None, probed: str) -> dict[str, Any]:
    """``store.envelope`` as the probed object says it (``None``: it did not tell); a setting that contradicts it is
    a :class:`ConfigError` naming the object."""
    if envelope is None:
        return {}
    if not config.is_set("store.envelope"):
        return {"store.envelope": envelope}
    if config["store.envelope"] != envelope:
        holds = (
            "whole records (an envelope: topic, partition, offset, timestamp, key, value, headers)"
            if envelope
            else "values only, not whole records"
        )
        raise ConfigError(
            f"store.envelope={str(config['store.envelope']).lower()}, but {probed} holds {holds}: leave "
            "store.envelope out to read what the bucket holds",
            key="store.envelope",
        )
    return {}


# ------------------------------------------------------------------------------------------------ the probes
def envelope_of(store: Store, example: Example, format_name: str, compression: str = "none") -> bool | None:
    """Whether the data object ``example`` holds whole records, from its footer (Parquet), header (Avro) or first
    line (JSON); ``None`` when a first megabyte does not tell."""
    if example.size < 1:
        return None
    if format_name == "parquet":
        return _parquet_envelope(store, example)
    window = PROBE_BYTES
    while True:
        head = store.get(example.key, 0, min(window, example.size) - 1)
        found = _avro_envelope(head) if format_name == "avro" else _json_envelope(head, compression, example.key)
        if found is not None or window >= min(example.size, PROBE_MAX):
            return found
        window *= 4


def is_envelope_schema(names: list[str]) -> bool:
    """Whether a Parquet file's columns are the envelope's (every column of a Kafka record)."""
    from kafka_s3.core.records import RECORD_SCHEMA

    return set(RECORD_SCHEMA.names) <= set(names)


def _parquet_envelope(store: Store, example: Example) -> bool | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = example.size
    if size < 12:
        return None
    tail = store.get(example.key, max(0, size - PROBE_BYTES), size - 1)
    footer = int.from_bytes(tail[-8:-4], "little") + 8
    if tail[-4:] != b"PAR1" or footer > size:  # a damaged object: reading it says so
        return None
    if footer > len(tail):
        tail = store.get(example.key, size - footer, size - 1)
    try:
        schema = pq.read_schema(pa.BufferReader(b"PAR1" + tail[-footer:]))
    except (pa.ArrowException, OSError):
        return None
    return is_envelope_schema(schema.names)


def _avro_envelope(head: bytes) -> bool | None:
    import fastavro
    import orjson

    from kafka_s3.core.formats.envelope import KAFKA_RECORD_NAME

    try:
        metadata = fastavro.block_reader(io.BytesIO(head)).metadata
        schema = orjson.loads(metadata["avro.schema"])
    except (EOFError, ValueError, KeyError, TypeError, OSError):
        return None
    if not isinstance(schema, dict):
        return False
    name = str(schema.get("name", ""))
    full = name if "." in name else f"{schema.get('namespace', '')}.{name}"
    return full == KAFKA_RECORD_NAME


def _json_envelope(head: bytes, compression: str, key: str) -> bool | None:
    import orjson

    from kafka_s3.core.formats.compression import decompressed
    from kafka_s3.core.formats.envelope import REQUIRED_ENVELOPE_FIELDS
    from kafka_s3.core.formats.json import ENVELOPE_FIELDS

    text = b""
    try:
        for chunk in decompressed(io.BytesIO(head), compression, key):
            text += chunk
            if b"\n" in text:
                break
    except FormatError:  # the window ends inside a compressed block: what came before it is enough if it holds a line
        pass
    line, newline, _ = text.partition(b"\n")
    if not newline:
        return None
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a damaged object: reading it says so, with the position
    return isinstance(first, dict) and set(REQUIRED_ENVELOPE_FIELDS) <= set(first) <= set(ENVELOPE_FIELDS)
