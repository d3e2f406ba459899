"""Kafka Connect's StringConverter: values are text in ``converter.encoding`` (UTF-8 by default)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping

import pyarrow as pa

from kafka_s3.core.converters.base import Converted, Converter, Logical
from kafka_s3.core.errors import ConfigError, ConversionError

ENCODING = "converter.encoding"


class StringConverter(Converter):
    """Decodes values to Arrow strings; UTF-8 (the default) is validated and converted without copying."""

    name = "string"

    def __init__(self, settings: Mapping[str, str], is_key: bool):
        super().__init__(settings, is_key)
        requested = self.settings.get(ENCODING, "UTF-8")
        try:
            self.encoding = codecs.lookup(requested).name
        except LookupError:
            key = f"{'key' if is_key else 'value'}.converter.{ENCODING}"
            raise ConfigError(
                f"{key}={requested!r} is not a known character set (e.g. UTF-8, UTF-16, ISO-8859-1)", key=key
            ) from None

    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        if self.encoding == "utf-8":
            try:
                return Converted.single(Logical("string", data.cast(pa.string())))
            except pa.ArrowInvalid:
                pass  # find the offending row below
        texts = []
        for row, raw in enumerate(data.to_pylist()):
            try:
                texts.append(None if raw is None else raw.decode(self.encoding))
            except UnicodeDecodeError as exc:
                raise ConversionError(
                    f"value of topic {topic} is not valid {self.encoding} text: {exc}", row=row
                ) from None
        return Converted.single(Logical("string", pa.array(texts, pa.string())))

    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        if values.kind == "bytes":
            return values.array  # already bytes: nothing to encode
        if values.kind not in ("string", "json"):
            raise ConversionError(
                f"StringConverter cannot encode {values.kind} values of topic {topic}: use JsonConverter to restore "
                "typed values"
            )
        if self.encoding == "utf-8":
            return values.array.cast(pa.binary())
        texts = values.array.cast(pa.string()).to_pylist()
        return pa.array([None if t is None else t.encode(self.encoding) for t in texts], pa.binary())
