"""Compaction: the throughput of ``kafka-s3 compact``, and the restore planning time on ``--chunks`` small chunks
before and after it.

    KAFKA_S3_SERVICES_DIR=.services .venv/bin/python bench/compaction.py [--chunks 10000] [--repeat 3]

Backs ``--chunks`` × ``--flush-size`` records (``--partitions`` partitions, bench dataset, exact-mode format) up with
``kafka-s3 backup --once`` — one small chunk per ``--flush-size`` records, what a backup tuned for freshness leaves —
then times ``kafka-s3 restore --dry-run`` (listing, every chunk manifest read, the checks: the plan a restore makes
first) ``--repeat`` times, ``kafka-s3 compact`` once (records and bytes merged per second of its wall time, Spark's
start included and apart), and the dry runs again on the merged chunks. Writes
``bench/results/<stamp>-compaction.md`` and ``.json`` (``--json-out``: the measurements only, for bench/run.py).
Nothing is asserted: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import product
from common import (
    bucket_usage,
    create_bucket,
    create_topic,
    delete_topics,
    kafka_kind_default,
    remove_bucket,
    run_measured,
    services_up,
)
from dataset import Dataset, produce

RESULTS = Path(__file__).resolve().parent / "results"
FORMAT = "envelope-avro"
SESSION = re.compile(r"spark session ready in ([0-9.]+)s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=10_000, help="small chunks backed up (default 10,000)")
    p.add_argument("--flush-size", type=int, default=10, help="records per chunk (default 10)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--target-bytes", default="64MiB", help="compact.target.bytes (default 64MiB)")
    p.add_argument("--repeat", type=int, default=3, help="restore dry runs timed before and after (default 3)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds before one command is killed")
    p.add_argument("--keep", action="store_true", help="keep the topic and bucket")
    p.add_argument("--json-out", type=Path, help="write the measurements here (no report): bench/run.py's step")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = RESULTS / f"{stamp}-compaction.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(kafka_kind_default(), work)
    results = {"stamp": stamp, **measure(args, services, work, f"bench-compact-{stamp.lower()}")}
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
        return 0
    (RESULTS / f"{stamp}-compaction.json").write_text(json.dumps(results, indent=2) + "\n")
    md = RESULTS / f"{stamp}-compaction.md"
    md.write_text(render(results))
    print(md.read_text())
    return 0


def measure(args: argparse.Namespace, services, work: Path, name: str) -> dict:
    """Produce, back up in small chunks, time the restore plans, compact, time them again; clean up."""
    from kafka_s3.core.prune import parse_size

    records = args.chunks * args.flush_size
    ds = Dataset(name, records, args.value_size, args.partitions)
    create_topic(services, name, args.partitions)
    create_bucket(services, name)
    out: dict = {
        "chunks": args.chunks,
        "flush_size": args.flush_size,
        "records": records,
        "partitions": args.partitions,
        "value_size": args.value_size,
        "format": product.FORMATS[FORMAT][0],
        "target_bytes": args.target_bytes,
    }
    try:
        print(f"producing {ds.label} into {name}", flush=True)
        produce(services.bootstrap, ds)
        props = product.backup_properties(name, name, name, FORMAT, args.flush_size)
        props["compact.target.bytes"] = str(parse_size(args.target_bytes, "--target-bytes"))
        config = product.write_properties(work / "backup.properties", props)
        backup = product.run_cli("backup", config, services, work / "backup.log", args.timeout)
        if backup["returncode"] != 0:
            raise RuntimeError(f"backup failed: see {work / 'backup.log'}")
        out["backup_wall_s"] = backup["wall_s"]
        out["objects_before"], out["bytes_before"] = bucket_usage(services, name)
        print(f"backup: {backup['wall_s']:.1f} s, {out['objects_before']} objects", flush=True)
        restore = product.restore_properties(name, name, f"{name}-restored", name, FORMAT, "alo")
        restore_config = product.write_properties(work / "restore.properties", restore)
        out["plan_before_s"] = plans(args, services, restore_config, work / "plan-before.log")
        print(f"restore plan on {args.chunks} chunks: {statistics.median(out['plan_before_s']):.2f} s", flush=True)
        log = work / "compact.log"
        command = [sys.executable, "-m", "kafka_s3.cli", "compact", "-c", str(config), "--json"]
        run = run_measured(command, services.environ(), log, args.timeout, capture_stdout=True)
        if run.returncode != 0:
            raise RuntimeError(f"compact failed: see {log}")
        report = json.loads(run.stdout)
        session = SESSION.search(log.read_text(errors="replace"))
        out["compact"] = {
            "wall_s": run.wall,
            "spark_start_s": float(session.group(1)) if session else None,
            "chunks": report["chunks"],
            "objects": report["objects"],
            "merged_objects": report["merged_objects"],
            "records": report["records"],
            "bytes": sum(g["bytes"] for g in report["groups"]),
            "peak_rss": run.peak_rss,
        }
        out["objects_after"], out["bytes_after"] = bucket_usage(services, name)
        done = out["compact"]
        print(f"compact: {run.wall:.1f} s, {done['chunks']} chunks into {done['merged_objects']} objects", flush=True)
        out["plan_after_s"] = plans(args, services, restore_config, work / "plan-after.log")
        print(f"restore plan after: {statistics.median(out['plan_after_s']):.2f} s", flush=True)
    finally:
        if not args.keep:
            delete_topics(services, [name])
            remove_bucket(services, name)
    return out


def plans(args: argparse.Namespace, services, config: Path, log: Path) -> list[float]:
    """Wall seconds of ``kafka-s3 restore --dry-run``, ``--repeat`` times."""
    walls = []
    for _ in range(args.repeat):
        run = product.cli(["restore", "-c", str(config), "--dry-run"], services, log, args.timeout)
        if run.returncode != 0:
            raise RuntimeError(f"restore --dry-run failed: see {log}")
        walls.append(run.wall)
    return walls


def render(results: dict) -> str:
    done = results["compact"]
    spark = done["spark_start_s"] or 0.0
    before, after = statistics.median(results["plan_before_s"]), statistics.median(results["plan_after_s"])
    lines = [
        f"# Compaction ({results['stamp']})",
        "",
        f"{results['records']:,} records ({results['value_size']} B values, {results['partitions']} partitions, "
        f"{results['format']}) backed up in {results['chunks']:,} chunks of {results['flush_size']} records; "
        f"compact.target.bytes={results['target_bytes']}.",
        "",
        "| measurement | value |",
        "|---|---|",
        f"| objects before → after | {results['objects_before']:,} → {results['objects_after']:,} |",
        f"| compact wall (Spark start) | {done['wall_s']:.1f} s ({spark:.1f} s) |",
        f"| chunks merged → objects | {done['chunks']:,} ({done['objects']:,} objects) → {done['merged_objects']:,} |",
        f"| throughput (wall) | {done['records'] / done['wall_s']:,.0f} records/s, "
        f"{done['bytes'] / done['wall_s'] / 1e6:.2f} MB/s |",
        f"| throughput (after Spark's start) | {done['records'] / max(done['wall_s'] - spark, 1e-9):,.0f} records/s |",
        f"| restore --dry-run before (median of {len(results['plan_before_s'])}) | {before:.2f} s |",
        f"| restore --dry-run after (median of {len(results['plan_after_s'])}) | {after:.2f} s |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
