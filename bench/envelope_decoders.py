"""Which decoder turns envelope objects into the restore's record batches fastest: measured before one is chosen.

Issue 30, target 4: exactly-once restores of the Avro and JSON envelopes were bounded by per-record Python decoding.
This script writes one partition of the bench's records (``dataset.py``: keys, 2 headers, JSON values of
``--value-size`` bytes) with kafka-s3's own envelope writers into objects of ``--flush-size`` records in memory, then
decodes the same objects with each candidate into ``RECORD_SCHEMA`` batches (what a restore task produces from) and
prints records/s (wall and CPU) and the ratio to the reader before, measured in the same run, rounds alternated
(the best of ``--rounds``):

- Avro envelope (deflate): the reader before (``AvroFormat.read`` with the compiled decoder declining: a Python
  walk of each block's bytes into columns); fastavro's block-level API (``block_reader``: one dict per record, then
  Arrow); Polars' ``read_avro`` (Rust) of the whole object, cast to ``RECORD_SCHEMA``;
- JSON envelope (gzip): the reader before (``JsonFormat.read`` with the compiled decoder declining: ``orjson.loads``
  per line, ``a2b_base64`` per value); Polars' ``read_ndjson`` and pyarrow's JSON reader, each with an explicit
  schema, base64 decoded by Polars (``str.decode``, vectorised) or per value (``a2b_base64``).

The chosen decoders are timed alone and inside the readers as they now run. Each candidate's output is checked
equal to what the reader gave before, first.

    .venv/bin/python bench/envelope_decoders.py --records 50000 --rounds 5
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from isal import isal_zlib

from kafka_s3.core.formats import avro as avro_module
from kafka_s3.core.formats import json as json_module
from kafka_s3.core.formats.avro_container import Framer, read_header
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.formats.compiled_envelope import (
    TEXT_ENVELOPE,
    CompiledDecodeError,
    avro_blocks_batch,
    framed_block,
    json_lines_batch,
)
from kafka_s3.core.formats.envelope import envelope_batch
from kafka_s3.core.formats.json_envelope import b64decode
from kafka_s3.core.records import HEADERS_TYPE, RECORD_SCHEMA
from profile_envelope import batches, make_format, write_objects

Decoder = Callable[[bytes], pa.Table]


def reader(fmt_name: str, compiled: bool = True) -> Decoder:
    """The format's reader as a restore runs it; without ``compiled``, as before: the compiled decoders decline every
    block and line, so the Python paths decode them (the column walk for Avro, ``orjson`` per line for JSON)."""
    fmt = make_format(fmt_name)

    def decline(*args: object) -> pa.RecordBatch:
        raise CompiledDecodeError("measuring the Python readers")

    def decode(data: bytes) -> pa.Table:
        saved = avro_module.avro_blocks_batch, json_module.json_lines_batch
        if not compiled:
            avro_module.avro_blocks_batch = json_module.json_lines_batch = decline
        try:
            batches = list(fmt.read(io.BytesIO(data), FileContext("bench", 0, 0, "o")))
        finally:
            avro_module.avro_blocks_batch, json_module.json_lines_batch = saved
        return pa.Table.from_batches(batches, RECORD_SCHEMA)

    return decode


def fastavro_blocks(data: bytes) -> pa.Table:
    """fastavro's block-level API: each block's records as dicts, then Arrow (the reader before the column walk)."""
    rows = [record for block in fastavro.block_reader(io.BytesIO(data)) for record in block]
    return pa.Table.from_batches([envelope_batch(rows)], RECORD_SCHEMA)


def record_table(table: pa.Table) -> pa.Table:
    """Columns of another reader (large types, ms timestamps) as ``RECORD_SCHEMA``."""
    table = table.select(RECORD_SCHEMA.names)
    return table.cast(RECORD_SCHEMA).combine_chunks()


def polars_avro(data: bytes) -> pa.Table:
    import polars as pl

    return record_table(pl.read_avro(io.BytesIO(data)).to_arrow())


def _gunzip(data: bytes) -> bytes:
    return isal_zlib.decompress(data, 31)


def polars_ndjson(data: bytes) -> pa.Table:
    import polars as pl

    frame = pl.read_ndjson(io.BytesIO(_gunzip(data)), schema=pl.from_arrow(TEXT_ENVELOPE.empty_table()).schema)
    return _polars_base64(frame)


def _polars_base64(frame: object) -> pa.Table:
    import polars as pl

    assert isinstance(frame, pl.DataFrame)
    decoded = frame.with_columns(
        pl.col("key").str.decode("base64"),
        pl.col("value").str.decode("base64"),
        pl.col("headers").list.eval(pl.element().struct.with_fields(pl.field("value").str.decode("base64"))),
        (pl.col("timestamp") * 1000).cast(pl.Datetime("us", "UTC")),
    )
    return record_table(decoded.to_arrow())


def _pyarrow_json(data: bytes) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=TEXT_ENVELOPE, unexpected_field_behavior="ignore")
    return pa_json.read_json(
        io.BytesIO(_gunzip(data)), read_options=pa_json.ReadOptions(use_threads=False), parse_options=options
    )


def pyarrow_json_polars_base64(data: bytes) -> pa.Table:
    import polars as pl

    frame = pl.from_arrow(_pyarrow_json(data))
    return _polars_base64(frame)


def pyarrow_json_a2b(data: bytes) -> pa.Table:
    table = _pyarrow_json(data).combine_chunks()
    headers = table.column("headers").chunk(0)
    items = headers.values
    values = b64decode(items.field("value").to_pylist())
    new_items = pa.StructArray.from_arrays([items.field("key"), values], fields=list(HEADERS_TYPE.value_type))
    columns = {
        "key": b64decode(table.column("key").to_pylist()),
        "value": b64decode(table.column("value").to_pylist()),
        "timestamp": pc.multiply(table.column("timestamp"), 1000).cast(RECORD_SCHEMA.field("timestamp").type),
        "headers": pa.ListArray.from_arrays(headers.offsets, new_items, type=HEADERS_TYPE),
    }
    arrays = [columns[name] if name in columns else table.column(name) for name in RECORD_SCHEMA.names]
    return pa.Table.from_arrays(arrays, schema=RECORD_SCHEMA)


def chosen_avro(data: bytes) -> pa.Table:
    """What the Avro reader now does: blocks framed and inflated here, decoded by Polars in one call."""
    source = io.BytesIO(data)
    _, sync = read_header(source)
    blocks = [framed_block(frame) for frame in Framer(source.read, sync).frames()]
    return pa.Table.from_batches([avro_blocks_batch(blocks, "deflate")])


def chosen_json(data: bytes) -> pa.Table:
    """What the JSON reader now does: gzip inflated (ISA-L), lines parsed by pyarrow, base64 decoded by Polars."""
    return pa.Table.from_batches([json_lines_batch(_gunzip(data))])


CANDIDATES: dict[str, dict[str, Decoder]] = {
    "avro": {
        "before: AvroFormat.read, Python column walk": reader("avro", compiled=False),
        "fastavro block_reader + dicts": fastavro_blocks,
        "polars read_avro": polars_avro,
        "polars read_avro of blocks inflated by ISA-L (chosen), checked": chosen_avro,
        "AvroFormat.read now (chosen, declined groups to the column walk)": reader("avro"),
    },
    "json": {
        "before: JsonFormat.read, orjson per line": reader("json", compiled=False),
        "polars read_ndjson + polars base64": polars_ndjson,
        "pyarrow read_json + polars base64": pyarrow_json_polars_base64,
        "pyarrow read_json + a2b_base64": pyarrow_json_a2b,
        "pyarrow read_json + polars base64 (chosen), checked": chosen_json,
        "JsonFormat.read now (chosen, declined segments line by line)": reader("json"),
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--value-sizes", default="1024,100")
    parser.add_argument("--flush-size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--formats", default="avro,json")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.records:,} records, {args.flush_size:,} per object")
    for value_size in map(int, args.value_sizes.split(",")):
        data = batches(args.records, value_size)
        for fmt_name in args.formats.split(","):
            objects = write_objects(make_format(fmt_name), data, args.flush_size)
            candidates = CANDIDATES[fmt_name]
            expected = [next(iter(candidates.values()))(o) for o in objects]
            for name, decode in candidates.items():
                for obj, want in zip(objects, expected, strict=True):
                    got = decode(obj)
                    if not got.equals(want):
                        raise SystemExit(f"{fmt_name} {name}: output differs from the current reader's")
            walls: dict[str, list[float]] = {name: [] for name in candidates}
            cpus: dict[str, list[float]] = {name: [] for name in candidates}
            for _ in range(args.rounds):
                for name, decode in candidates.items():
                    started, cpu = time.perf_counter(), time.process_time()
                    for obj in objects:
                        decode(obj)
                    walls[name].append(time.perf_counter() - started)
                    cpus[name].append(time.process_time() - cpu)
            base_wall, base_cpu = min(next(iter(walls.values()))), min(next(iter(cpus.values())))
            print(f"\n{fmt_name} envelope, {value_size} B values ({sum(map(len, objects)) / 1e6:.1f} MB stored)")
            print("| decoder | records/s (wall) | records/CPU-s | ÷ before (wall) | ÷ before (CPU) |")
            print("|---|--:|--:|--:|--:|")
            for name in candidates:
                wall, cpu = min(walls[name]), min(cpus[name])
                print(
                    f"| {name} | {args.records / wall:,.0f} | {args.records / cpu:,.0f} | "
                    f"{base_wall / wall:.2f}× | {base_cpu / cpu:.2f}× |"
                )


if __name__ == "__main__":
    main()
