"""Where an envelope backup's and restore's format time goes, in-process, without Spark, Kafka or S3.

The bench's records (``dataset.py``: keys, 2 headers, JSON values of ``--value-size`` bytes) of one partition are
written by each envelope format's writer into objects of ``--flush-size`` records in memory (what a backup task's
format work is), then read back by the format's reader into ``RECORD_SCHEMA`` batches (what a restore task decodes
before producing). Prints seconds and records/s per format and step and, with ``--profile``, cProfile's top
functions by own time.

    .venv/bin/python bench/profile_envelope.py --records 200000 --value-size 1024 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa

from dataset import Dataset, records
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.base import FileContext, Format
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.formats.parquet import ParquetFormat
from kafka_s3.core.records import RECORD_SCHEMA

FORMATS = {
    "avro": (AvroFormat, {"avro.codec": "deflate"}),
    "parquet": (ParquetFormat, {"parquet.codec": "snappy"}),
    "json": (JsonFormat, {"s3.compression.type": "gzip"}),
}


class Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass


def batches(n: int, value_size: int, size: int = 5000) -> list[pa.RecordBatch]:
    """``n`` records of partition 0 of the bench dataset, as ``RECORD_SCHEMA`` batches of ``size`` records."""
    ds = Dataset("bench", n, value_size, 1)
    out, rows = [], []
    for i, (_, key, value, headers) in enumerate(records(ds)):
        rows.append((key, value, i, 1_764_000_000_000_000 + i * 1000, headers))
        if len(rows) == size:
            out.append(_batch(rows))
            rows = []
    if rows:
        out.append(_batch(rows))
    return out


def _batch(rows: list) -> pa.RecordBatch:
    keys, values, offsets, times, headers = zip(*rows, strict=True)
    n = len(rows)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(["bench"] * n, pa.string()),
            pa.array([0] * n, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(times, pa.int64()).cast(RECORD_SCHEMA.field("timestamp").type),
            pa.array([0] * n, pa.int32()),
            pa.array([[{"key": k, "value": v} for k, v in h] for h in headers], RECORD_SCHEMA.field("headers").type),
        ],
        schema=RECORD_SCHEMA,
    )


def make_format(name: str) -> Format:
    cls, options = FORMATS[name]
    raw = {"name": "p", "topics": "bench", "flush.size": "50000", "s3.bucket.name": "b", "format.class": name}
    return cls(SINK.parse({**raw, **options}), envelope=True)


def write_objects(fmt: Format, data: list[pa.RecordBatch], flush: int) -> list[bytes]:
    objects, sink, writer, count = [], None, None, 0
    for batch in data:
        if writer is None:
            sink = Sink()
            writer = fmt.writer(sink, FileContext("bench", 0, count, f"o{count}"))
        writer.write(batch, None)
        count += batch.num_rows
        if count % flush == 0:
            writer.close()
            objects.append(b"".join(sink.parts))
            writer = None
    if writer is not None:
        writer.close()
        objects.append(b"".join(sink.parts))
    return objects


def read_objects(fmt: Format, objects: list[bytes]) -> int:
    n = 0
    for i, data in enumerate(objects):
        for batch in fmt.read(io.BytesIO(data), FileContext("bench", 0, 0, f"o{i}")):
            n += batch.num_rows
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--flush-size", type=int, default=50_000)
    parser.add_argument("--formats", default="avro,parquet,json")
    parser.add_argument("--profile", action="store_true", help="cProfile each step, print the top functions")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    data = batches(args.records, args.value_size)
    for name in args.formats.split(","):
        fmt = make_format(name)
        for step in ("write", "read"):
            profiler = cProfile.Profile() if args.profile else None
            started, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            if step == "write":
                objects = write_objects(fmt, data, args.flush_size)
                n = args.records
            else:
                n = read_objects(fmt, objects)
            if profiler:
                profiler.disable()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            size = sum(map(len, objects))
            print(
                f"{name} {step}: {n:,} records in {seconds:.2f} s = {n / seconds:,.0f}/s, CPU {cpu:.2f} s = "
                f"{n / cpu:,.0f}/CPU-s ({size / 1e6:.1f} MB)"
            )
            if profiler:
                stats = pstats.Stats(profiler)
                stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
