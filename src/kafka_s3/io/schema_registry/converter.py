"""Confluent's AvroConverter: Avro values in the Schema Registry wire format.

A Kafka value is a magic byte ``0``, the writer schema's 4-byte big-endian registry id, then the Avro binary datum.
Decoding looks each id up once (the client caches schemas; this converter caches everything derived from them:
parsed schema, Arrow type, registry version), decodes datums with fastavro and gives one run of typed values per
stretch of records sharing a schema. The run's :class:`ValueSchema` carries the writer schema as registered (schema
references inlined), so Avro and Parquet objects keep it, and its registry version, which orders schemas for
``schema.compatibility``. The version is the schema's version under the record's subject (TopicNameStrategy by
default), as Confluent's converter reads it; a schema not registered under that subject has no version.

Encoding (restores) registers the values' schema under the subject of the topic the records go to (``auto.register
.schemas``, default true; otherwise it must be registered already), or with ``use.latest.version=true`` projects
values to the subject's latest schema, and writes the wire format.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

import fastavro
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.avro_data import arrow_type, datum_adapter, expand, full_name, has_named_branches
from kafka_s3.core.converters.base import Converted, Converter, Logical, ValueSchema
from kafka_s3.core.converters.connect_payload import first_unconvertible
from kafka_s3.core.converters.connect_schema import SchemaError, fingerprint
from kafka_s3.core.converters.json import NULL_VALUES
from kafka_s3.core.errors import ConfigError, ConversionError
from kafka_s3.io.schema_registry.client import (
    SchemaRegistryUnavailable,
    boolean,
    client_config,
    describe,
    is_not_found,
    registry_client,
    subject_name,
    subject_strategy,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

log = logging.getLogger(__name__)

MAGIC_BYTE = 0
HEADER_BYTES = 5
PRIMITIVE_KINDS = {"bytes": "bytes", "string": "string"}  # raw values restored as Avro primitives


@dataclass(frozen=True)
class WriterSchema:
    """A registry schema and everything decoding needs, computed once per schema id."""

    schema_id: int
    value_schema: ValueSchema
    parsed: Any  # fastavro's parsed writer schema
    named_tuples: bool  # decode with return_named_type (a union of several types has a named branch)
    adapter: Any  # datum -> value pyarrow takes, or None


@dataclass(frozen=True)
class Encoding:
    """How values of one schema are written for one subject."""

    prefix: bytes  # magic byte and schema id
    schema: ValueSchema  # the schema values are written with (the subject's latest under use.latest.version)
    expanded: Any


class AvroConverter(Converter):
    """Configured by Confluent's settings (see :mod:`.schema_registry`), plus ``auto.register.schemas``,
    ``use.latest.version``, ``normalize.schemas`` and ``key|value.subject.name.strategy``."""

    name = "avro"

    def __init__(self, settings: Mapping[str, str], is_key: bool):
        super().__init__(settings, is_key)
        self.prefix = f"{'key' if is_key else 'value'}.converter."
        self.client_conf = client_config(self.settings, self.prefix)
        self.strategy = subject_strategy(self.settings, self.prefix, is_key)
        self.auto_register = boolean(self.settings, "auto.register.schemas", True, self.prefix)
        self.use_latest = boolean(self.settings, "use.latest.version", False, self.prefix)
        self.normalize = boolean(self.settings, "normalize.schemas", False, self.prefix)
        self._client: SchemaRegistryClient | None = None
        self._writers: dict[int, WriterSchema] = {}
        self._encodings: dict[tuple[str, str], Encoding] = {}

    @property
    def url(self) -> str:
        url: str = self.client_conf["url"]
        return url

    @property
    def client(self) -> SchemaRegistryClient:
        """The registry client, created on first use (a backup that never decodes values never contacts it)."""
        if self._client is None:
            self._client = registry_client(self.client_conf)
        return self._client

    # ---------------------------------------------------------------------------------------------------- decode
    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        raws = data.to_pylist()
        role = "key" if self.is_key else "value"
        what = f"{role} of topic {topic}"
        runs: list[tuple[int, Logical]] = []
        datums: list[Any] = []
        current: WriterSchema | None = None
        start = 0
        reader = fastavro.schemaless_reader
        for row, raw in enumerate(raws):
            if raw is None:  # a tombstone joins the run it falls in
                datums.append(None)
                continue
            if len(raw) < HEADER_BYTES or raw[0] != MAGIC_BYTE:
                raise ConversionError(
                    f"{what}: Unknown magic byte! The {role} is not in the Schema Registry wire "
                    f"format (magic byte 0, then a 4-byte schema id), as AvroConverter reads it",
                    row=row,
                )
            schema_id = int.from_bytes(raw[1:HEADER_BYTES], "big")
            writer = self._writers.get(schema_id) or self._writer(schema_id, topic, row, what)
            if current is not None and writer.value_schema.fingerprint != current.value_schema.fingerprint:
                runs.append((start, _run(current, datums, start, what)))
                start, datums = row, []
            current = writer
            try:
                datums.append(
                    reader(io.BytesIO(raw[HEADER_BYTES:]), writer.parsed, None, return_named_type=writer.named_tuples)
                )
            except Exception as exc:  # fastavro raises EOFError, ValueError, UnicodeDecodeError... on bad data
                raise ConversionError(
                    f"{what}: cannot decode its Avro data with schema id {schema_id}: {type(exc).__name__}: {exc}",
                    row=row,
                ) from None
        if current is None:
            return Converted.single(Logical("struct", pa.nulls(len(raws)), NULL_VALUES))
        runs.append((start, _run(current, datums, start, what)))
        return Converted(runs)

    def _writer(self, schema_id: int, topic: str, row: int, what: str) -> WriterSchema:
        try:
            schema = self.client.get_schema(schema_id)
        except Exception as exc:
            self._raise(
                exc, f"{what}: schema id {schema_id} cannot be resolved in the Schema Registry at {self.url}", row
            )
        if (schema.schema_type or "AVRO").upper() != "AVRO":
            raise ConversionError(
                f"{what}: schema id {schema_id} is a {schema.schema_type} schema; AvroConverter reads Avro", row=row
            )
        try:
            avro = self._inline_references(schema, set())
            expanded = expand(avro)
            arrow = arrow_type(expanded)
            parsed = fastavro.parse_schema(avro)
        except SchemaError as exc:
            raise ConversionError(f"{what}: schema id {schema_id}: {exc}", row=row) from None
        except Exception as exc:  # fastavro's parse errors
            raise ConversionError(f"{what}: schema id {schema_id} is not valid Avro: {exc}", row=row) from None
        name = full_name(expanded)
        version = self._version(schema, name, topic, row, what)
        value_schema = ValueSchema(avro=avro, arrow=arrow, fingerprint=fingerprint(avro), version=version, name=name)
        named = has_named_branches(expanded)
        writer = WriterSchema(schema_id, value_schema, parsed, named, datum_adapter(expanded, named))
        self._writers[schema_id] = writer
        return writer

    def _version(self, schema: Schema, name: str | None, topic: str, row: int, what: str) -> int | None:
        """The schema's version under the record's subject, or ``None`` when it is not registered there."""
        try:
            subject = subject_name(self.strategy, topic, self.is_key, name)
        except Exception:
            return None
        try:
            return self.client.lookup_schema(subject, schema, normalize_schemas=self.normalize).version
        except Exception as exc:
            if is_not_found(exc):
                log.info("%s: its schema is not registered under subject %s: it has no version", what, subject)
                return None
            self._raise(exc, f"{what}: cannot look up the version of its schema under subject {subject}", row)

    def _inline_references(self, schema: Schema, seen: set[str]) -> Any:
        """The schema's JSON with the named types of its references defined where first used (self-contained, as
        an Avro object's header needs it)."""
        avro = orjson.loads(cast(str, schema.schema_str))  # a registered schema always has its text
        references = list(schema.references or [])
        if not references:
            return avro
        definitions: dict[str, Any] = {}
        for reference in references:
            key = f"{reference.subject}/{reference.version}"
            if key in seen:
                continue
            seen.add(key)
            try:
                # a registered reference always names its subject and version
                registered = self.client.get_version(cast(str, reference.subject), cast(int, reference.version))
            except Exception as exc:
                self._raise(
                    exc,
                    f"schema reference {reference.name} ({reference.subject} version "
                    f"{reference.version}) cannot be resolved",
                    None,
                )
            referenced = self._inline_references(registered.schema, seen)
            for named in _named_types(referenced, None):
                definitions.setdefault(named[0], named[1])
        return _inline(avro, definitions, None, set())

    def _raise(self, exc: BaseException, message: str, row: int | None) -> NoReturn:
        """An unknown id, subject or version is about the record; refused credentials are a configuration error;
        anything else (unreachable, server errors) an outage worth retrying."""
        if is_not_found(exc) or isinstance(exc, (ValueError, TypeError)):
            raise ConversionError(f"{message}: {describe(exc)}", row=row) from None
        if getattr(exc, "http_status_code", None) in (401, 403):
            raise ConfigError(
                f"{message}: {describe(exc)}: check {self.prefix}basic.auth.credentials.source and "
                f"{self.prefix}basic.auth.user.info (or bearer.auth.*)",
                key=self.prefix + "basic.auth.user.info",
            ) from None
        raise SchemaRegistryUnavailable(f"{message}: {describe(exc)}") from None

    # ---------------------------------------------------------------------------------------------------- encode
    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        if values.kind == "json":
            raise ConversionError(
                "schemaless JSON values hold no Avro schema to write them with (back up with "
                "format.class=avro or parquet, or store.envelope=true, to restore Avro values)"
            )
        if values.kind in PRIMITIVE_KINDS:
            avro = PRIMITIVE_KINDS[values.kind]
            values = Logical("struct", values.array, ValueSchema(avro, values.array.type, fingerprint(avro)))
        schema = cast(ValueSchema, values.schema)  # struct values have one; bytes and strings were given one above
        target = self.subject_topic(topic)
        encoding = self._encoding(target, schema)
        array = values.array
        if encoding.schema.fingerprint != schema.fingerprint:
            from kafka_s3.core.schema_evolution import project

            array = project(values, encoding.schema).array
        valid = array.is_valid()
        present = array.filter(valid) if array.null_count else array
        from kafka_s3.core.formats.avro_encoding import encode

        try:
            body = encode(present, encoding.expanded)
        except ConversionError as exc:
            raise ConversionError(f"cannot write values of topic {topic} as Avro: {exc}") from None
        framed = pc.binary_join_element_wise(
            pa.scalar(encoding.prefix, pa.large_binary()), body, pa.scalar(b"", pa.large_binary())
        )
        if array.null_count:
            framed = pc.replace_with_mask(pa.nulls(len(array), pa.large_binary()), valid, framed)
        return framed.cast(pa.binary())

    def _encoding(self, topic: str, schema: ValueSchema) -> Encoding:
        from confluent_kafka.schema_registry import Schema

        try:
            expanded = expand(schema.avro)
        except SchemaError as exc:
            raise ConversionError(f"values of topic {topic} have no valid Avro schema: {exc}") from None
        subject = subject_name(self.strategy, topic, self.is_key, full_name(expanded))
        key = (subject, schema.fingerprint)
        cached = self._encodings.get(key)
        if cached is not None:
            return cached
        registry_schema = Schema(orjson.dumps(schema.avro).decode(), "AVRO")
        try:
            if self.use_latest:
                latest = self.client.get_latest_version(subject)
                avro = orjson.loads(cast(str, latest.schema.schema_str))  # a registered schema always has its text
                if latest.schema.references:
                    avro = self._inline_references(latest.schema, set())
                written = ValueSchema(
                    avro=avro,
                    arrow=arrow_type(expand(avro)),
                    fingerprint=fingerprint(avro),
                    version=latest.version,
                    name=full_name(expand(avro)),
                )
                schema_id = latest.schema_id
            elif self.auto_register:
                schema_id = self.client.register_schema(subject, registry_schema, normalize_schemas=self.normalize)
                written = schema
            else:
                schema_id = self.client.lookup_schema(
                    subject, registry_schema, normalize_schemas=self.normalize
                ).schema_id
                written = schema
        except Exception as exc:
            action = (
                "read the latest schema of"
                if self.use_latest
                else "register the schema under"
                if self.auto_register
                else "find the schema under"
            )
            self._raise(exc, f"cannot {action} subject {subject} in the Schema Registry at {self.url}", None)
        if written is not schema:
            from kafka_s3.core.schema_evolution import projection_problem

            problem = projection_problem(schema, written)
            if problem:
                raise ConversionError(
                    f"use.latest.version: values cannot be written with the latest schema of "
                    f"subject {subject}: {problem}"
                )
        prefix = bytes([MAGIC_BYTE]) + int(cast(int, schema_id)).to_bytes(4, "big")  # the registry always gives an id
        encoding = Encoding(prefix, written, expand(written.avro))
        self._encodings[key] = encoding
        return encoding


def _run(writer: WriterSchema, datums: list[Any], start: int, what: str) -> Logical:
    schema = writer.value_schema
    adapt = writer.adapter
    if adapt is not None:
        try:
            datums = [None if d is None else adapt(d) for d in datums]
        except ValueError as exc:
            raise ConversionError(f"{what} does not match its schema: {exc}", row=start) from None
    try:
        array = pa.array(datums, schema.arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        row = start + first_unconvertible(datums, lambda values: pa.array(values, schema.arrow))
        raise ConversionError(f"{what} does not fit Arrow type {schema.arrow}: {exc}", row=row) from None
    return Logical("struct", array, schema)


# --------------------------------------------------------------------------------------------- schema references
def _full(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _named_types(schema: Any, namespace: str | None) -> list[tuple[str, Any]]:
    """``(full name, definition)`` of every named type a schema defines, with the namespace each needs to stand
    alone."""
    out: list[tuple[str, Any]] = []
    if isinstance(schema, list):
        for branch in schema:
            out += _named_types(branch, namespace)
    elif isinstance(schema, dict):
        typ = schema.get("type")
        if typ in ("record", "enum", "fixed", "error"):
            name = _full(schema["name"], schema.get("namespace", namespace))
            inner = name.rpartition(".")[0] or None
            standalone = {**schema, "name": name.rpartition(".")[2]}
            if inner:
                standalone["namespace"] = inner
            else:
                standalone.pop("namespace", None)
            out.append((name, standalone))
            for field in schema.get("fields", []):
                out += _named_types(field["type"], inner)
        elif typ == "array":
            out += _named_types(schema["items"], namespace)
        elif typ == "map":
            out += _named_types(schema["values"], namespace)
        elif isinstance(typ, (dict, list)):
            out += _named_types(typ, namespace)
    return out


PRIMITIVE_NAMES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


def _inline(schema: Any, definitions: dict[str, Any], namespace: str | None, defined: set[str]) -> Any:
    """``schema`` with each referenced named type written out where first used (later uses stay names)."""
    if isinstance(schema, list):
        return [_inline(b, definitions, namespace, defined) for b in schema]
    if isinstance(schema, str):
        if schema in PRIMITIVE_NAMES:
            return schema
        full = _full(schema, namespace)
        for candidate in (full, schema):
            if candidate in defined:
                return schema
            if candidate in definitions:
                defined.add(candidate)
                return _inline(definitions[candidate], definitions, candidate.rpartition(".")[0] or None, defined)
        return schema
    if not isinstance(schema, dict):
        return schema
    typ = schema.get("type")
    out = dict(schema)
    if typ in ("record", "enum", "fixed", "error"):
        name = _full(schema["name"], schema.get("namespace", namespace))
        defined.add(name)
        inner = name.rpartition(".")[0] or None
        if "fields" in schema:
            out["fields"] = [{**f, "type": _inline(f["type"], definitions, inner, defined)} for f in schema["fields"]]
    elif typ == "array":
        out["items"] = _inline(schema["items"], definitions, namespace, defined)
    elif typ == "map":
        out["values"] = _inline(schema["values"], definitions, namespace, defined)
    elif isinstance(typ, (str, list, dict)) and typ not in PRIMITIVE_NAMES:
        out["type"] = _inline(typ, definitions, namespace, defined)
    return out
