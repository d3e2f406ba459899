"""Kafka Connect's ByteArrayConverter: values pass through as raw bytes."""

from __future__ import annotations

import pyarrow as pa

from kafka_s3.core.converters.base import Converted, Converter, Logical
from kafka_s3.core.errors import ConversionError


class ByteArrayConverter(Converter):
    """Raw bytes in, raw bytes out: the converter that makes a backup byte-exact."""

    name = "bytearray"

    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        return Converted.single(Logical("bytes", data))

    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        if values.kind in ("bytes", "json"):
            return values.array
        if values.kind == "string":
            return values.array.cast(pa.binary())  # UTF-8 text is its own bytes: no copy
        raise ConversionError(
            f"ByteArrayConverter cannot encode {values.kind} values of topic {topic} back to bytes: use "
            "JsonConverter (value.converter=org.apache.kafka.connect.json.JsonConverter) to restore typed values"
        )
