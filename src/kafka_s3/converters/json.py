"""Kafka Connect's JsonConverter: plain JSON (``schemas.enable=false``) or ``{"schema", "payload"}`` envelopes.

With schemas, each record's Connect schema becomes an Avro schema and an Arrow type, and payloads become typed Arrow
values, so Avro and Parquet backups keep the types. Streams repeat one schema on every record: a schema is parsed
once per distinct JSON text, and consecutive records sharing it form one run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import orjson
import pyarrow as pa

from ..errors import ConfigError, ConversionError
from .base import Converted, Converter, Logical, ValueSchema
from .connect import (
    JSON_OPTIONS,
    ConnectSchema,
    Decoder,
    SchemaError,
    fingerprint,
    first_null_violation,
    first_unconvertible,
    json_default,
    payload_decoder,
    payload_values,
)

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
        self._connect_schemas: dict[str, bytes] = {}  # ValueSchema fingerprint -> Connect schema JSON, for restores

    # ---------------------------------------------------------------------------------------------------- decode
    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        raws = data.to_pylist()
        if not self.schemas_enabled:
            return Converted.single(Logical("json", pa.array(_compact_all(raws, topic), pa.binary())))
        return Converted(self._typed_runs(raws, topic))

    def _typed_runs(self, raws: list[bytes | None], topic: str) -> list[tuple[int, Logical]]:
        runs: list[tuple[int, Logical]] = []
        payloads: list[Any] = []
        current: _TypedSchema | None = None
        current_json: Any = object()  # matches no schema
        start = 0
        for row, raw in enumerate(raws):
            if raw is None:  # a tombstone joins the run it falls in
                payloads.append(None)
                continue
            schema_json, payload = _envelope(raw, row, topic)
            if schema_json != current_json:  # dict equality: cheap while a stream repeats one schema
                typed = self._typed_schema(schema_json, row, topic)
                if current is not None and typed.identity != current.identity:
                    runs.append((start, _run(current, payloads, start, topic)))
                    start, payloads = row, []
                current, current_json = typed, schema_json
            payloads.append(_decode(current, payload, row, topic))
        runs.append((start, _run(current, payloads, start, topic)))
        return runs

    def _typed_schema(self, schema_json: Any, row: int, topic: str) -> _TypedSchema:
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
                raise ConversionError(f"invalid Connect schema in a record of topic {topic}: {exc}", row=row) from None
            typed = _TypedSchema(connect, value_schema, payload_decoder(connect))
        self._typed[cache_key] = typed
        return typed

    # ---------------------------------------------------------------------------------------------------- encode
    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        if values.kind == "json":
            return values.array
        payloads = payload_values(values.array)
        rendered = [None if p is None else orjson.dumps(p, default=json_default, option=JSON_OPTIONS) for p in payloads]
        if self.schemas_enabled:
            prefix = b'{"schema":' + self._connect_schema_json(values, topic) + b',"payload":'
            rendered = [None if r is None else prefix + r + b"}" for r in rendered]
        return pa.array(rendered, pa.binary())

    def _connect_schema_json(self, values: Logical, topic: str) -> bytes:
        if values.kind != "struct":  # raw bytes and text are Connect's optional bytes/string schemas
            return orjson.dumps(ConnectSchema("bytes" if values.kind == "bytes" else "string", optional=True).to_json())
        cached = self._connect_schemas.get(values.schema.fingerprint)
        if cached is None:
            try:
                connect = ConnectSchema.from_avro(values.schema.avro, values.schema.arrow)
            except SchemaError as exc:
                raise ConversionError(f"cannot restore values of topic {topic} as Connect data: {exc}") from None
            if values.schema.version is not None:
                connect = replace(connect, version=values.schema.version)
            cached = self._connect_schemas[values.schema.fingerprint] = orjson.dumps(connect.to_json())
        return cached


def _boolean_setting(settings: Mapping[str, str], name: str, default: bool, is_key: bool) -> bool:
    raw = settings.get(name)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        key = f"{'key' if is_key else 'value'}.converter.{name}"
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: Expected value to be either true or false", key=key)
    return text == "true"


def _compact_all(raws: list[bytes | None], topic: str) -> list[bytes | None]:
    out: list[bytes | None] = []
    for row, raw in enumerate(raws):
        if raw is None:
            out.append(None)
            continue
        try:
            out.append(orjson.dumps(orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            raise ConversionError(f"value of topic {topic} is not valid JSON: {exc}", row=row) from None
    return out


def _envelope(raw: bytes, row: int, topic: str) -> tuple[Any, Any]:
    try:
        envelope = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConversionError(f"value of topic {topic} is not valid JSON: {exc}", row=row) from None
    if not (isinstance(envelope, dict) and len(envelope) == 2 and "schema" in envelope and "payload" in envelope):
        raise ConversionError(f"value of topic {topic}: {ENVELOPE_REQUIRED}", row=row)
    return envelope["schema"], envelope["payload"]


def _decode(typed: _TypedSchema, payload: Any, row: int, topic: str) -> Any:
    schema = typed.connect
    if schema is None:
        return payload
    if payload is None and not schema.optional and schema.default is None:
        raise ConversionError(f"value of topic {topic} has a null payload but its schema is not optional", row=row)
    if typed.decode is None:
        return payload
    try:
        return typed.decode(payload)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConversionError(f"value of topic {topic} does not match its schema: {exc}", row=row) from None


def _run(typed: _TypedSchema | None, payloads: list[Any], start: int, topic: str) -> Logical:
    if typed is None:
        return Logical("struct", pa.nulls(len(payloads)), NULL_VALUES)
    if typed.connect is None:
        return Logical("json", pa.array([None if p is None else orjson.dumps(p) for p in payloads], pa.binary()))
    arrow = typed.value_schema.arrow
    try:
        array = pa.array(payloads, arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        row = start + first_unconvertible(payloads, lambda values: pa.array(values, arrow))
        raise ConversionError(f"value of topic {topic} does not match its schema: {exc}", row=row) from None
    violation = first_null_violation(array, optional=True)  # top-level nulls are tombstones, checked in _decode
    if violation is not None:
        row, path = violation
        raise ConversionError(f"value of topic {topic} has a null {path} but the field is not optional", row=start + row)
    return Logical("struct", array, typed.value_schema)
