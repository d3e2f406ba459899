"""Kafka Connect's JsonConverter: plain JSON (``schemas.enable=false``) or ``{"schema", "payload"}`` envelopes.

With schemas, each record's Connect schema becomes an Avro schema and an Arrow type, and payloads become typed Arrow
values, so Avro and Parquet backups keep the types. Streams repeat one schema on every record: a schema is parsed
once per distinct JSON text, a record repeating the previous record's schema text has only its payload parsed, and
consecutive records sharing a schema form one run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson
import pyarrow as pa

from kafka_s3.core import json_text
from kafka_s3.core.converters.base import Converted, Converter, Logical, ValueSchema
from kafka_s3.core.converters.connect_payload import (
    JSON_OPTIONS,
    Decoder,
    first_null_violation,
    first_unconvertible,
    json_default,
    payload_decoder,
    payload_values,
)
from kafka_s3.core.converters.connect_schema import ConnectSchema, SchemaError, fingerprint
from kafka_s3.core.errors import ConfigError, ConversionError

SCHEMAS_ENABLE = "schemas.enable"
ENVELOPE_REQUIRED = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. '
    "If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration."
)
# The schema of a run holding only null values (tombstones): Connect gives them no schema at all.
NULL_VALUES = ValueSchema(avro="null", arrow=pa.null(), fingerprint=fingerprint("null"))


@dataclass(frozen=True)
class _TypedSchema:
    """One envelope schema and everything derived from it. ``connect`` is ``None`` for ``"schema": null``."""

    connect: ConnectSchema | None
    value_schema: ValueSchema | None
    decode: Decoder | None

    @property
    def identity(self) -> str:
        return self.value_schema.fingerprint if self.value_schema else "schemaless"


SCHEMALESS = _TypedSchema(None, None, None)


class JsonConverter(Converter):
    """Configured by ``schemas.enable`` (default true, as in Kafka Connect)."""

    name = "json"

    def __init__(self, settings: Mapping[str, str], is_key: bool):
        super().__init__(settings, is_key)
        self.schemas_enabled = _boolean_setting(self.settings, SCHEMAS_ENABLE, True, is_key)
        self._typed: dict[bytes, _TypedSchema] = {}
        # (ValueSchema fingerprint, Arrow type) -> Connect schema JSON, for restores
        self._connect_schemas: dict[tuple[str, pa.DataType], bytes] = {}

    # ---------------------------------------------------------------------------------------------------- decode
    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        raws = data.to_pylist()
        subject = f"{'key' if self.is_key else 'value'} of topic {topic}"  # how errors name what failed
        if not self.schemas_enabled:
            return Converted.single(Logical("json", _compact_all(raws, subject)))
        return Converted(self._typed_runs(raws, subject))

    def _typed_runs(self, raws: list[bytes | None], subject: str) -> list[tuple[int, Logical]]:
        runs: list[tuple[int, Logical]] = []
        payloads: list[Any] = []
        current: _TypedSchema | None = None
        prefix = None  # the raw '{"schema":...,"payload":' of the last fully parsed envelope
        start = 0
        for row, raw in enumerate(raws):
            if raw is None:  # a tombstone joins the run it falls in
                payloads.append(None)
                continue
            payload = _payload_after(prefix, raw)
            if payload is _NOT_SAME_SCHEMA:
                schema_json, payload = _envelope(raw, row, subject)
                typed = self._typed_schema(schema_json, row, subject)
                prefix = _schema_prefix(raw, schema_json)
                if current is not None and typed.identity != current.identity:
                    runs.append((start, _run(current, payloads, start, subject)))
                    start, payloads = row, []
                current = typed
            assert current is not None  # a payload that follows a prefix follows the envelope that set the prefix
            payloads.append(_decode(current, payload, row, subject))
        runs.append((start, _run(current, payloads, start, subject)))
        return runs

    def _typed_schema(self, schema_json: Any, row: int, subject: str) -> _TypedSchema:
        cache_key = orjson.dumps(schema_json)
        typed = self._typed.get(cache_key)
        if typed is not None:
            return typed
        if schema_json is None:
            typed = SCHEMALESS
        else:
            try:
                connect = ConnectSchema.from_json(schema_json)
                value_schema = ValueSchema(
                    avro=connect.to_avro(),
                    arrow=connect.to_arrow(),
                    fingerprint=fingerprint(connect.to_json()),
                    version=connect.version,
                    name=connect.name,
                )
            except SchemaError as exc:
                raise ConversionError(f"invalid Connect schema in a {subject}: {exc}", row=row) from None
            typed = _TypedSchema(connect, value_schema, payload_decoder(connect))
        self._typed[cache_key] = typed
        return typed

    # ---------------------------------------------------------------------------------------------------- encode
    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        if values.kind == "json":
            return values.array
        payloads = payload_values(values.array)
        if not self.schemas_enabled:
            return json_text.binary_array(payloads, _render_payload)
        prefix = b'{"schema":' + self._connect_schema_json(values, topic) + b',"payload":'
        return json_text.binary_array(payloads, lambda p: prefix + _render_payload(p) + b"}")

    def _connect_schema_json(self, values: Logical, topic: str) -> bytes:
        if values.kind != "struct":  # raw bytes and text are Connect's optional bytes/string schemas
            return orjson.dumps(ConnectSchema("bytes" if values.kind == "bytes" else "string", optional=True).to_json())
        schema = values.schema
        assert schema is not None  # struct values always carry their schema
        cache_key = (schema.fingerprint, schema.arrow)
        cached = self._connect_schemas.get(cache_key)
        if cached is None:
            try:
                connect = ConnectSchema.from_avro(schema.avro, schema.arrow)
            except SchemaError as exc:
                raise ConversionError(f"cannot restore values of topic {topic} as Connect data: {exc}") from None
            if schema.version is not None:
                connect = replace(connect, version=schema.version)
            cached = self._connect_schemas[cache_key] = orjson.dumps(connect.to_json())
        return cached


def _boolean_setting(settings: Mapping[str, str], name: str, default: bool, is_key: bool) -> bool:
    raw = settings.get(name)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        key = f"{'key' if is_key else 'value'}.converter.{name}"
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {key}: Expected value to be either true or false", key=key
        )
    return text == "true"


def _render_payload(payload: Any) -> bytes:
    return orjson.dumps(payload, default=json_default, option=JSON_OPTIONS)


def _compact_all(raws: list[bytes | None], subject: str) -> pa.Array:
    try:
        return json_text.binary_array(raws, lambda raw: orjson.dumps(orjson.loads(raw)))
    except orjson.JSONDecodeError:
        for row, raw in enumerate(raws):  # the error path only: which record
            try:
                if raw is not None:
                    orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ConversionError(f"{subject} is not valid JSON: {exc}", row=row) from None
        raise


def _envelope(raw: bytes, row: int, subject: str) -> tuple[Any, Any]:
    try:
        envelope = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConversionError(f"{subject} is not valid JSON: {exc}", row=row) from None
    if not (isinstance(envelope, dict) and len(envelope) == 2 and "schema" in envelope and "payload" in envelope):
        raise ConversionError(f"{subject}: {ENVELOPE_REQUIRED}", row=row)
    return envelope["schema"], envelope["payload"]


_NOT_SAME_SCHEMA = object()
_PAYLOAD_KEY = re.compile(rb',\s*"payload"\s*:')


def _schema_prefix(raw: bytes, schema_json: Any) -> bytes | None:
    """The bytes of ``raw`` up to its payload, when the envelope starts with its schema (as JsonConverter writes).

    Each candidate is checked by parsing it, so a ``"payload"`` key inside the schema (a default, a doc) cannot fool it.
    """
    for match in _PAYLOAD_KEY.finditer(raw):
        candidate = raw[: match.end()]
        try:
            if orjson.loads(candidate + b"null}") == {"schema": schema_json, "payload": None}:
                return candidate
        except orjson.JSONDecodeError:
            continue
    return None


def _payload_after(prefix: bytes | None, raw: bytes) -> Any:
    """The payload of an envelope that repeats the previous record's schema text, parsing only the payload.

    Streams repeat one schema on every record, often far larger than the payload. A record that is the same prefix,
    then one JSON value, then ``}`` is an envelope with that very schema and no other field. Anything else (another
    schema, another key order, trailing spaces) returns ``_NOT_SAME_SCHEMA`` and is parsed in full.
    """
    if prefix is None or not raw.startswith(prefix) or not raw.endswith(b"}"):
        return _NOT_SAME_SCHEMA
    try:
        return orjson.loads(raw[len(prefix) : -1])
    except orjson.JSONDecodeError:
        return _NOT_SAME_SCHEMA


def _decode(typed: _TypedSchema, payload: Any, row: int, subject: str) -> Any:
    schema = typed.connect
    if schema is None:
        return payload
    if payload is None and not schema.optional and schema.default is None:
        raise ConversionError(f"{subject} has a null payload but its schema is not optional", row=row)
    if typed.decode is None:
        return payload
    try:
        return typed.decode(payload)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConversionError(f"{subject} does not match its schema: {exc}", row=row) from None


def _run(typed: _TypedSchema | None, payloads: list[Any], start: int, subject: str) -> Logical:
    if typed is None:
        return Logical("struct", pa.nulls(len(payloads)), NULL_VALUES)
    if typed.connect is None:
        return Logical("json", json_text.binary_array(payloads, orjson.dumps))
    assert typed.value_schema is not None  # set whenever ``connect`` is
    arrow = typed.value_schema.arrow
    try:
        array = pa.array(payloads, arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        row = start + first_unconvertible(payloads, lambda values: pa.array(values, arrow))
        raise ConversionError(f"{subject} does not match its schema: {exc}", row=row) from None
    violation = first_null_violation(array, optional=True)  # top-level nulls are tombstones, checked in _decode
    if violation is not None:
        row, path = violation
        raise ConversionError(f"{subject} has a null {path} but the field is not optional", row=start + row)
    return Logical("struct", array, typed.value_schema)
