"""Many quiet partitions: the fixed cost per partition of one ``kafka-s3 backup --once`` and one ``kafka-s3 restore``.

    KAFKA_S3_SERVICES_DIR=.services .venv/bin/python bench/partitions.py [--partitions 1,10,100,1000] [--records 10,100]

For each record count R (records per partition) and partition count P: a topic of P partitions holding R records
each (the bench dataset: keys, 2 headers, ``--value-size`` B values), backed up with ``kafka-s3 backup --once`` into a
bucket of its own and restored (exactly-once) into a new topic. Per R the same P·R records at the largest P are also
backed up and restored from 4 partitions: the rate beside which the many partitions are judged (issue 30's 1,000 × 10
against 4 × 2,500). Reported per point: the wall, Spark's start, the time inside the Spark job, and per R the
per-partition overhead as the slope of a least-squares line through the walls (and through the job times) over P.
``--full`` adds 5,000 partitions. Writes ``bench/results/<stamp>-partitions.md`` and ``.json`` (``--json-out``: the
measurements only, for bench/run.py). Nothing is asserted: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import product
from common import (
    KAFKA_LABELS,
    create_bucket,
    create_topic,
    delete_topics,
    kafka_kind_default,
    remove_bucket,
    services_up,
    stop_own_kafka,
)
from dataset import Dataset, produce

RESULTS = Path(__file__).resolve().parent / "results"
BASELINE_PARTITIONS = 4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", default="1,10,100,1000", help="partition counts (default 1,10,100,1000)")
    p.add_argument("--records", default="10,100", help="records per partition (default 10,100)")
    p.add_argument("--full", action="store_true", help="add 5,000 partitions")
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--format", default="envelope-parquet", choices=sorted(product.FORMATS))
    p.add_argument("--restore-mode", default="eos", choices=sorted(product.RESTORE_MODES))
    p.add_argument("--no-restore", action="store_true", help="time the backups only")
    p.add_argument("--no-baseline", action="store_true", help="skip the 4-partition runs")
    p.add_argument("--kafka", choices=sorted(KAFKA_LABELS), help="broker kind (default: the services' broker)")
    p.add_argument(
        "--own-port",
        type=int,
        default=21392,
        help="port of the bench's own broker, when one is started (another kind than the services'; default 21392)",
    )
    p.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="run every command on this Spark Connect server (e.g. make spark-connect's, or the user's server) "
        "instead of in-process: Spark's start out of each wall, as for plain commands once the user's server is up",
    )
    p.add_argument("--timeout", type=float, default=3600, help="seconds before one command is killed")
    p.add_argument("--keep", action="store_true", help="keep the topics and buckets")
    p.add_argument("--json-out", type=Path, help="write the measurements here (no report): bench/run.py's step")
    args = p.parse_args(argv)
    args.partition_counts = sorted(
        {int(x) for x in args.partitions.split(",") if x.strip()} | ({5000} if args.full else set())
    )
    args.record_counts = sorted({int(x) for x in args.records.split(",") if x.strip()})
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = RESULTS / f"{stamp}-partitions.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(args.kafka or kafka_kind_default(), work, own_port=args.own_port)
    try:
        described = {"stamp": stamp, "version": version(), "services": services.describe()}
        results = {**described, **measure(args, services, work, stamp.lower())}
    finally:
        stop_own_kafka(work)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
        return 0
    (RESULTS / f"{stamp}-partitions.json").write_text(json.dumps(results, indent=2) + "\n")
    md = RESULTS / f"{stamp}-partitions.md"
    md.write_text(render(results))
    print(md.read_text())
    return 0


def version() -> str:
    """The commit measured (with ``+dirty`` when the tree has changes)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    if os.environ.get("PYTHONPATH"):  # the code measured is another tree's (an A/B against an older commit)
        return f"PYTHONPATH={os.environ['PYTHONPATH']}"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=root, capture_output=True, text=True).stdout
    return head.strip() + ("+dirty" if dirty.strip() else "")


def measure(args: argparse.Namespace, services, work: Path, run_id: str) -> dict:
    """Every (records per partition, partitions) point, then per record count the 4-partition baseline."""
    out: dict = {
        "format": product.FORMATS[args.format][0],
        "restore_mode": args.restore_mode,
        "spark": f"Spark Connect {args.remote}" if args.remote else "in-process local[*]",
        "value_size": args.value_size,
        "points": [],
        "baselines": [],
    }
    for per_partition in args.record_counts:
        for partitions in args.partition_counts:
            point = one_point(args, services, work, run_id, partitions, partitions * per_partition)
            out["points"].append({**point, "records_per_partition": per_partition})
            print(summary_line(point), flush=True)
        if not args.no_baseline:
            total = max(args.partition_counts) * per_partition
            point = one_point(args, services, work, run_id, BASELINE_PARTITIONS, total)
            out["baselines"].append(
                {**point, "records_per_partition": total // BASELINE_PARTITIONS, "beside": per_partition}
            )
            print("baseline " + summary_line(point), flush=True)
    return out


def one_point(args: argparse.Namespace, services, work: Path, run_id: str, partitions: int, records: int) -> dict:
    """Produce ``records`` over ``partitions``, back them up, restore them; the runs' measurements."""
    name = f"bench-parts-{run_id}-{partitions}p-{records}r"
    target = f"{name}-restored"
    where = work / f"{partitions}p-{records}r"
    create_topic(services, name, partitions)
    create_bucket(services, name)
    point: dict = {"partitions": partitions, "records": records}
    try:
        produce(services.bootstrap, Dataset(name, records, args.value_size, partitions))
        props = product.backup_properties(name, name, name, args.format, max(records, 1000))
        config = product.write_properties(where / "backup.properties", props)
        point["backup"] = _measured(
            product.run_cli("backup", config, services, where / "backup.log", args.timeout, remote=args.remote)
        )
        if not args.no_restore and point["backup"]["returncode"] == 0:
            restore = product.restore_properties(f"{name}-restore", name, target, name, args.format, args.restore_mode)
            restore_config = product.write_properties(where / "restore.properties", restore)
            run = product.run_cli(
                "restore", restore_config, services, where / "restore.log", args.timeout, remote=args.remote
            )
            point["restore"] = _measured(run)
    finally:
        if not args.keep:
            delete_topics(services, [name, target])
            remove_bucket(services, name)
    return point


def _measured(run: dict) -> dict:
    keys = ("returncode", "wall_s", "spark_start_s", "job_s", "records", "objects", "peak_rss", "log", "error")
    return {k: run[k] for k in keys if k in run}


def summary_line(point: dict) -> str:
    parts = [f"{point['partitions']} partitions, {point['records']:,} records in all:"]
    for kind in ("backup", "restore"):
        run = point.get(kind)
        if run:
            state = "" if run["returncode"] == 0 else f" FAILED ({run.get('error', '')[-200:]})"
            parts.append(f"{kind} {run['wall_s']:.1f} s (job {run['job_s']:.1f} s){state}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------------- report
def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys over xs (None with fewer than two distinct xs)."""
    if len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def _ok(run: dict | None) -> bool:
    return bool(run) and run.get("returncode") == 0


def overheads(results: dict) -> list[dict]:
    """Per (records per partition, command): the slope of the wall and of the job time over the partition count."""
    rows = []
    per_partition = sorted({p["records_per_partition"] for p in results["points"]})
    for r in per_partition:
        for kind in ("backup", "restore"):
            points = [p for p in results["points"] if p["records_per_partition"] == r and _ok(p.get(kind))]
            xs = [float(p["partitions"]) for p in points]
            wall = slope(xs, [p[kind]["wall_s"] for p in points])
            job = slope(xs, [p[kind]["job_s"] for p in points])
            if wall is not None:
                rows.append(
                    {"records_per_partition": r, "kind": kind, "wall_s_per_partition": wall, "job_s_per_partition": job}
                )
    return rows


def render(results: dict) -> str:
    lines = [
        f"# Many partitions ({results['stamp']}, {results.get('version', '')})",
        "",
        f"{results['format']}, {results['value_size']} B values, restores {results['restore_mode']}; broker: "
        f"{results.get('services', {}).get('kafka', 'n/a')}; Spark: {results.get('spark', 'in-process local[*]')}. One "
        "`kafka-s3 backup --once` and one `kafka-s3 restore` per point; wall (Spark start, inside the job) in seconds.",
        "",
        "| partitions × records | backup wall | start | job | restore wall | start | job |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for point in [*results["points"], *results.get("baselines", [])]:
        label = f"{point['partitions']:,} × {point['records_per_partition']:,}"
        if point in results.get("baselines", []):
            label += " (baseline)"
        cells = []
        for kind in ("backup", "restore"):
            run = point.get(kind)
            if not _ok(run):
                cells += ["failed" if run else "–", "", ""]
                continue
            start = run.get("spark_start_s")
            cells += [f"{run['wall_s']:.1f}", "–" if start is None else f"{start:.1f}", f"{run['job_s']:.1f}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Per-partition overhead (least-squares slope over the partition counts):", ""]
    lines += ["| records per partition | command | wall ms / partition | job ms / partition |", "|--:|---|--:|--:|"]
    for row in overheads(results):
        job = row["job_s_per_partition"]
        lines.append(
            f"| {row['records_per_partition']:,} | {row['kind']} | {row['wall_s_per_partition'] * 1000:.1f} | "
            f"{'–' if job is None else f'{job * 1000:.1f}'} |"
        )
    if results.get("baselines"):
        lines += ["", "The most partitions beside the same records from 4 partitions (rate = records / wall):", ""]
        lines += ["| records | command | many partitions | 4 partitions | rate ratio |", "|--:|---|--:|--:|--:|"]
        for base in results["baselines"]:
            many = sorted(
                (p for p in results["points"] if p["records_per_partition"] == base.get("beside")),
                key=lambda p: p["partitions"],
            )
            for kind in ("backup", "restore"):
                if not many or not _ok(many[-1].get(kind)) or not _ok(base.get(kind)):
                    continue
                wide, narrow = many[-1][kind]["wall_s"], base[kind]["wall_s"]
                lines.append(
                    f"| {base['records']:,} | {kind} | {many[-1]['partitions']:,} partitions: {wide:.1f} s | "
                    f"{narrow:.1f} s | {narrow / wide:.2f}× |"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
