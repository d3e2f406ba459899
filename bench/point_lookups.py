"""Point lookups in a backup: ten offsets of one partition through ``spark.read.format("kafka-s3")``
bounded by Spark's Kafka-source options (``assign`` and ``startingOffsets``/``endingOffsets``: only the objects
holding them are read), beside the same query as a ``where`` that Spark filters over a full scan (Spark 4 keeps a
pushed-down plan on the DataFrame, so the reader does not narrow by filters there: docs/spark.md), and
``kafka-s3 read``'s in-process lookup.

    KAFKA_S3_SERVICES_DIR=.services .venv/bin/python bench/point_lookups.py [--records 200000] [--repeat 3]

Backs ``--records`` records (4 partitions, bench dataset) up with ``kafka-s3 backup --once`` in the exact-mode format
(Avro envelope), ``--flush-size`` records per object, then times each query ``--repeat`` times in one Spark session
(started once, not timed) and writes ``bench/results/<stamp>-point-lookups.md`` and ``.json``. Nothing is asserted:
a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import product
from common import create_bucket, create_topic, delete_topics, kafka_kind_default, remove_bucket, services_up
from dataset import Dataset, produce

RESULTS = Path(__file__).resolve().parent / "results"
FORMAT = "envelope-avro"
LOOKUP = "lookup, bounded by assign/startingOffsets/endingOffsets"
FULL_SCAN = "lookup, where over a full scan"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--flush-size", type=int, default=5_000, help="records per object")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", action="store_true", help="keep the topic and bucket")
    p.add_argument("--json-out", type=Path, help="write the measurements here (no report): bench/run.py's step")
    return p.parse_args(argv)


def timed(run) -> tuple[float, object]:
    started = time.monotonic()
    out = run()
    return time.monotonic() - started, out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = RESULTS / f"{stamp}-point-lookups.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(kafka_kind_default(), work)
    results = {"stamp": stamp, **lookups(args, services, work, f"bench-lookup-{stamp.lower()}")}
    if args.json_out:  # bench/run.py's step: it renders the results in its own report
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
        return 0
    (RESULTS / f"{stamp}-point-lookups.json").write_text(json.dumps(results, indent=2) + "\n")
    md = RESULTS / f"{stamp}-point-lookups.md"
    md.write_text(render(results))
    print(md.read_text())
    return 0


def lookups(args: argparse.Namespace, services, work: Path, name: str) -> dict:
    """Produce the dataset into topic ``name``, back it up into bucket ``name``, time the queries, clean up."""
    ds = Dataset(name, args.records, args.value_size, args.partitions)
    create_topic(services, name, args.partitions)
    create_bucket(services, name)
    try:
        print(f"producing {ds.label} into {name}", flush=True)
        produce(services.bootstrap, ds)
        props = product.backup_properties(name, name, name, FORMAT, args.flush_size)
        config = product.write_properties(work / "backup.properties", props)
        backup = product.run_cli("backup", config, services, work / "backup.log", 1800)
        if backup["returncode"] != 0:
            raise RuntimeError(f"backup failed: see {work / 'backup.log'}")
        print(f"backup: {backup['wall_s']:.1f} s, {backup['objects']} objects", flush=True)
        results = measure(args, services, props, work)
    finally:
        if not args.keep:
            delete_topics(services, [name])
            remove_bucket(services, name)
    results.update(
        {
            "records": args.records,
            "partitions": args.partitions,
            "value_size": args.value_size,
            "flush_size": args.flush_size,
            "format": product.FORMATS[FORMAT][0],
            "backup_wall_s": backup["wall_s"],
            "objects": backup["objects"],
        }
    )
    return results


def measure(args: argparse.Namespace, services, props: dict[str, str], work: Path) -> dict:
    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.pipelines.read.lookup import read_records
    from kafka_s3.spark.session import build_session

    options = {
        **props,
        "store.url": services.s3_endpoint or "",
        "aws.access.key.id": services.access_key or "",
        "aws.secret.access.key": services.secret_key or "",
        "s3.region": services.region,
    }
    options = {k: v for k, v in options.items() if v}
    per_partition = args.records // args.partitions
    first = per_partition // 2 + 17  # inside an object, away from its edges
    wanted = list(range(first, first + 10))
    condition = f"partition = 0 AND offset IN ({', '.join(map(str, wanted))})"
    spark = build_session(app_name="kafka-s3 point lookups")

    topic = props["topics"]
    bounded = {
        "assign": json.dumps({topic: [0]}),
        "startingOffsets": json.dumps({topic: {"0": wanted[0]}}),
        "endingOffsets": json.dumps({topic: {"0": wanted[-1] + 1}}),
    }

    def frame(case: str):
        reader = spark.read.format("kafka-s3").options(**options)
        if case == LOOKUP:
            return reader.options(**bounded).load().select("partition", "offset")
        df = reader.load()
        return (df.where(condition) if case == FULL_SCAN else df).select("partition", "offset")

    config = SOURCE.parse(options)
    cases = {
        LOOKUP: lambda: frame(LOOKUP).collect(),
        FULL_SCAN: lambda: frame(FULL_SCAN).collect(),
        "whole backup (no filter)": lambda: frame("whole").collect(),
        "kafka-s3 read (no Spark)": lambda: read_records(config, 0, first, 10),
    }
    times: dict[str, list[float]] = {case: [] for case in cases}
    rows: dict[str, int] = {}
    for run in cases.values():  # a warm-up each: Python workers and imports, the first listing
        run()
    for _ in range(args.repeat):
        for case, run in cases.items():
            seconds, out = timed(run)
            times[case].append(seconds)
            rows[case] = len(out)  # type: ignore[arg-type]
            print(f"  {case}: {seconds:.2f} s, {rows[case]} rows", flush=True)
    # What planning gave each query: one Spark partition per Kafka partition that has objects to read.
    spark_partitions = {
        LOOKUP: frame(LOOKUP).rdd.getNumPartitions(),
        FULL_SCAN: frame(FULL_SCAN).rdd.getNumPartitions(),
    }
    spark.stop()
    return {"condition": condition, "times_s": times, "rows": rows, "spark_partitions": spark_partitions}


def render(results: dict) -> str:
    times = results["times_s"]
    full = statistics.median(times[FULL_SCAN])
    lines = [
        f"# Point lookups {results['stamp']}",
        "",
        f"{results['records']:,} records × {results['value_size']} B, {results['partitions']} partitions, "
        f"{results['format']}, {results['flush_size']:,} records per object ({results['objects']} objects); "
        f"backup {results['backup_wall_s']:.1f} s. Query: `{results['condition']}`. Spark session started once "
        "(not timed); each case run once to warm up, then timed in turn.",
        "",
        "| case | rows | Spark partitions | median s | min s | × full scan |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case, samples in times.items():
        median = statistics.median(samples)
        planned = results.get("spark_partitions", {}).get(case)
        lines.append(
            f"| {case} | {results['rows'][case]:,} | {'–' if planned is None else planned} | {median:.2f} | "
            f"{min(samples):.2f} | {median / full:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
