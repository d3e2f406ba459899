"""Compression: whole-object streams (``s3.compression.type`` for JSON and ByteArray) and Avro container blocks.

Streams are compressed and decompressed as data flows, never holding an object. Output is deterministic: the gzip
header carries no file name and a zero modification time, and every codec's output depends only on its input.

Deflate (gzip streams and Avro's deflate codec): an explicit level 0-9 is zlib's, as in Confluent's connector. The
default level (-1) is ISA-L's level 1 instead of zlib's level 6: measured on the benchmark's JSON, ~500 MB/s
against zlib level 6's ~27 MB/s (and level 1's ~150), for objects ~25% larger than level 6's. ISA-L's output depends
on how its input is cut into calls, so streams feed it fixed slices at fixed stream positions (``SLICE_BYTES``):
the bytes then depend only on the records, never on how they were batched.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO, Protocol

import cramjam
import pyarrow as pa
from backports import zstd
from isal import isal_zlib

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import FormatWriter

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Logical

SUFFIXES = {"none": "", "gzip": ".gz", "zstd": ".zst"}
LEVEL_KEY = "s3.compression.level"
DEFAULT_LEVEL = -1
FAST_DEFLATE_LEVEL = 1  # the ISA-L level DEFAULT_LEVEL means for deflate (see the module docstring)
SLICE_BYTES = 128 * 1024  # what a gzip stream hands its compressor at a time
READ_CHUNK = 1024 * 1024
GZIP_WBITS, RAW_DEFLATE_WBITS = 31, -15


class Sink(Protocol):
    """Where compressed bytes go: a binary file, or anything else with ``write``."""

    def write(self, data: bytes | memoryview, /) -> object: ...


class _Compressor(Protocol):
    """A streaming compressor: zlib's and ISA-L's ``compressobj()``, ``zstd.ZstdCompressor``."""

    def compress(self, data: bytes | memoryview, /) -> bytes: ...

    def flush(self) -> bytes: ...


class _Decompressor(Protocol):
    """A streaming decompressor of one member/frame: zlib's ``decompressobj()``, ``zstd.ZstdDecompressor``."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, /) -> bytes: ...


class _DeflateModule(Protocol):
    """What is used of ``zlib`` and ``isal.isal_zlib``."""

    def compressobj(self, level: int, method: int, wbits: int) -> _Compressor: ...

    def compress(self, data: bytes, level: int, wbits: int, /) -> bytes: ...


def _deflate_module(level: int) -> _DeflateModule:
    """ISA-L for the default level, zlib for an explicit one (Confluent's meaning of levels 0-9)."""
    return isal_zlib if level == DEFAULT_LEVEL else zlib


def _deflate_level(level: int) -> int:
    return FAST_DEFLATE_LEVEL if level == DEFAULT_LEVEL else level


def stream_settings(config: Config) -> tuple[str, int]:
    """``(s3.compression.type, s3.compression.level)``, the level checked against the chosen algorithm."""
    compression, level = config["s3.compression.type"], config[LEVEL_KEY]
    if compression == "gzip" and level > 9:
        raise ConfigError(f"{LEVEL_KEY}={level} is out of range for gzip: use -1 (default) or 0-9", key=LEVEL_KEY)
    if compression == "zstd" and level == 0:
        raise ConfigError(f"{LEVEL_KEY}=0 is out of range for zstd: use -1 (default) or 1-22", key=LEVEL_KEY)
    return compression, level


class CompressingSink:
    """Compresses what is written into ``sink``; :meth:`finish` ends the compressed stream but leaves the sink open."""

    def __init__(self, sink: Sink, compression: str, level: int = DEFAULT_LEVEL):
        self._sink = sink
        self._pending: bytearray | None = None  # gzip: bytes not yet handed to the compressor (< SLICE_BYTES)
        self._compressor: _Compressor | None
        if compression == "gzip":
            self._compressor = _deflate_module(level).compressobj(_deflate_level(level), zlib.DEFLATED, GZIP_WBITS)
            self._pending = bytearray()
        elif compression == "zstd":
            self._compressor = zstd.ZstdCompressor(level=None if level == DEFAULT_LEVEL else level)
        else:
            self._compressor = None

    def write(self, data: bytes | memoryview) -> None:
        if self._compressor is None:
            self._sink.write(data)
            return
        if self._pending is None:
            self._emit(self._compressor.compress(data))
            return
        self._pending += data
        if len(self._pending) >= SLICE_BYTES:
            whole = len(self._pending) - len(self._pending) % SLICE_BYTES
            with memoryview(self._pending) as view:
                for start in range(0, whole, SLICE_BYTES):
                    self._emit(self._compressor.compress(view[start : start + SLICE_BYTES]))
            del self._pending[:whole]

    def _emit(self, out: bytes) -> None:
        if out:
            self._sink.write(out)

    def finish(self) -> None:
        if self._compressor is None:
            return
        if self._pending:
            self._emit(self._compressor.compress(bytes(self._pending)))
            self._pending.clear()
        self._emit(self._compressor.flush())


def decompressed(source: BinaryIO, compression: str, object_key: str) -> Iterator[bytes]:
    """The object's bytes, decompressed as read. Corrupt or truncated data raises FormatError naming the byte."""
    raw = iter(lambda: source.read(READ_CHUNK), b"")
    if compression == "gzip":
        return _inflate(raw, lambda: zlib.decompressobj(GZIP_WBITS), zlib.error, "gzip", object_key)
    if compression == "zstd":
        return _inflate(raw, zstd.ZstdDecompressor, zstd.ZstdError, "zstd", object_key)
    return raw


def _inflate(
    raw: Iterator[bytes], new: Callable[[], _Decompressor], error: type[Exception], name: str, object_key: str
) -> Iterator[bytes]:
    """Decompress one or more concatenated members/frames (as ``gzip -d`` and ``zstd -d`` accept)."""
    decompressor: _Decompressor | None = None
    offset = 0  # compressed bytes consumed before the current chunk
    for chunk in raw:
        data = chunk
        while data:
            if decompressor is None:
                decompressor = new()
            try:
                out = decompressor.decompress(data)
            except error as exc:
                raise FormatError(f"corrupt {name} data ({exc})", object_key, f"byte {offset}") from None
            if out:
                yield out
            if not decompressor.eof:
                break
            data, decompressor = decompressor.unused_data, None
        offset += len(chunk)
    if decompressor is not None:
        raise FormatError(
            f"truncated {name} data: the stream ends inside a compressed block", object_key, f"byte {offset}"
        )


def avro_block_compressor(codec: str, level: int = DEFAULT_LEVEL) -> Callable[[bytes], bytes]:
    """The compression of one Avro container block, as the Avro specification defines each codec."""
    if codec == "deflate":  # raw deflate (no zlib header), as Avro wants
        module, deflate_at = _deflate_module(level), _deflate_level(level)
        return lambda data: module.compress(data, deflate_at, RAW_DEFLATE_WBITS)
    if codec == "snappy":
        return lambda data: bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")
    if codec == "bzip2":
        return bz2.compress
    if codec == "xz":
        return lzma.compress
    if codec == "zstandard":
        return zstd.compress
    return lambda data: data


class StreamWriter(FormatWriter):
    """A writer for formats whose objects are a (compressed) stream of rendered batches: JSON and ByteArray."""

    def __init__(self, sink: BinaryIO, compression: str, level: int, render: Callable[..., bytes | memoryview]):
        self._out = CompressingSink(sink, compression, level)
        self._render = render

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if len(records):
            self._out.write(self._render(records, values))

    def close(self) -> None:
        self._out.finish()
