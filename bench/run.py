"""``make bench``: kafka-s3's benchmark. Writes ``bench/results/<UTC timestamp>.md`` and ``.json``.

One run, on the local services (or external ones named by ``KAFKA_BOOTSTRAP_SERVERS`` / ``AWS_ENDPOINT_URL_S3``):

1. datasets: ``--records`` records over ``--partitions`` partitions with keys and 2 headers, one topic per variant
   (``main``: ``--value-size`` bytes, ``small``: ``--small-value-size``), produced by a fast idempotent producer;
2. limits on the same data: raw confluent-kafka consume, kcat consume, raw produce into a fresh topic (raw consume
   and produce are sampled before and after the variant's runs), S3 multipart put/get of large objects;
3. ``kafka-s3 backup --once`` per format, then ``kafka-s3 restore`` of each backup into fresh topics, exactly-once
   and at-least-once; every run is a CLI subprocess with its own bucket/config/group, whole-tree RSS sampled;
4. the peer, Quix Streams FileSink/FileSource (``bench/peer_quix.py`` in ``.venv-peer``), on the same topic and S3;
5. the memory case: Field partitioner with 1,000 files open at once, ``s3.part.size=5242880``.

Steps run in order of priority: every variant's first format (backup + both restores) and first Quix format, the
memory case, then the other formats. A step that would not finish within ``--budget-minutes`` (judged from the longest
step of its kind so far) is skipped and listed in the report, so a default run stays within 30 minutes however slow
the machine or the product is; the skipped steps are the least important ones.

Usage: ``make bench`` (defaults: 1,000,000 records, 1 KiB and 100 B variants), ``make bench BENCH_ARGS=--quick``,
``.venv/bin/python bench/run.py --help``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import traceback
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import limits
import peer
import product
import report
from common import (
    ROOT,
    MiB,
    Services,
    create_bucket,
    create_topic,
    delete_topics,
    remove_bucket,
    services_up,
)
from dataset import Dataset, payload_bytes, produce

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run.py", description="kafka-s3 benchmark (see module docstring)")
    p.add_argument("--records", type=int, default=1_000_000, help="records per dataset (default 1,000,000)")
    p.add_argument("--value-size", type=int, default=1024, help="value bytes of the main variant (default 1024)")
    p.add_argument("--small-value-size", type=int, default=100, help="value bytes of the small variant (default 100)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--variants", default="main,small", help="main, small or both (default main,small)")
    p.add_argument(
        "--formats",
        default=",".join(product.FORMATS),
        help=f"kafka-s3 formats (default all: {','.join(product.FORMATS)})",
    )
    p.add_argument("--restore-modes", default="eos,alo", help="eos (exactly.once.support=required), alo (disabled)")
    p.add_argument("--flush-size", type=int, default=50_000, help="flush.size of the backups (default 50,000)")
    p.add_argument("--peer-sink-formats", default="json,parquet", help="Quix FileSink formats (default json,parquet)")
    p.add_argument("--peer-source-formats", default="json", help="Quix FileSource formats (default json)")
    p.add_argument("--no-peer", action="store_true", help="skip Quix Streams")
    p.add_argument("--no-memory-case", action="store_true", help="skip the 1,000-open-files memory case")
    p.add_argument("--s3-objects", type=int, default=4, help="S3 limit: objects (default 4)")
    p.add_argument("--s3-object-mib", type=int, default=64, help="S3 limit: MiB per object (default 64)")
    p.add_argument("--run-timeout", type=float, default=1500, help="seconds before one run is killed")
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=28,
        help="skip what would not finish within this many minutes, judged from the runs so far "
        "(default 28; 0: no budget)",
    )
    p.add_argument("--keep", action="store_true", help="keep the topics and buckets (default: deleted after use)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 20,000 records, main variant only, flush.size 5,000, 2 × 16 MiB S3 objects (unless given)",
    )
    p.add_argument("--results-dir", type=Path, default=RESULTS)
    p.add_argument("--render", type=Path, metavar="RESULT.json", help="only rewrite RESULT.md from RESULT.json")
    args = p.parse_args(argv)
    if args.quick:
        given = {a.split("=")[0] for a in (argv if argv is not None else sys.argv[1:])}
        if "--records" not in given:
            args.records = 20_000
        if "--flush-size" not in given:
            args.flush_size = 5_000
        if "--s3-objects" not in given:
            args.s3_objects = 2
        if "--s3-object-mib" not in given:
            args.s3_object_mib = 16
        if "--variants" not in given:
            args.variants = "main"
    return args


def csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


class Clock:
    def __init__(self):
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{(time.monotonic() - self.started) / 60:5.1f} min] {text}", flush=True)


# ---------------------------------------------------------------------------------------------------- one variant
SKIPPED = {"skipped": "time budget"}
RESERVE_S = 90  # kept for the closing limits, cleanup and the report


class Bench:
    def __init__(self, args, services: Services, work: Path, run_id: str, clock: Clock):
        self.args, self.services, self.work, self.run_id, self.clock = args, services, work, run_id, clock
        self.peer_error: str | None = None
        self.deadline = clock.started + args.budget_minutes * 60 if args.budget_minutes > 0 else None
        self.walls: dict[str, float] = {}  # longest wall time seen per kind of step, to judge what still fits
        self.skipped: list[str] = []
        self.topics: list[str] = []  # dataset topics, deleted at the end

    def fits(self, kind: str, what: str, then: str = "", ds: Dataset | None = None) -> bool:
        """Whether a step of this kind is expected to finish within the time budget, plus a reserve for the closing
        limits. Expected: the longest step of this kind on this dataset so far, else of this kind on any dataset,
        else the longest step of any kind."""
        if self.deadline is None:
            return True
        remaining = self.deadline - time.monotonic() - RESERVE_S
        longest = max([v for k, v in self.walls.items() if isinstance(k, str) and k != "setup"] or [0.0])

        def estimate(k: str) -> float:
            return self.walls.get((k, ds.topic) if ds else k, self.walls.get(k, longest))

        expected = estimate(kind) + (estimate(then) if then else 0.0)
        if remaining > expected:
            return True
        self.clock.say(f"  skipping {what}: ~{expected:.0f}s expected, {max(0, remaining):.0f}s left in the budget")
        self.skipped.append(what)
        return False

    def timed(self, kind: str, run: dict, ds: Dataset | None = None) -> dict:
        for key in (kind, (kind, ds.topic)) if ds else (kind,):
            self.walls[key] = max(self.walls.get(key, 0.0), run.get("wall_s", 0.0))
        return run

    def name(self, *parts) -> str:
        return "-".join(["kafka-s3-bench", self.run_id, *map(str, parts)])

    def cleanup_topics(self, *topics) -> None:
        if not self.args.keep:
            delete_topics(self.services, topics)

    def cleanup_bucket(self, bucket: str) -> None:
        if not self.args.keep:
            remove_bucket(self.services, bucket)

    def run(self, variants: list[tuple[str, int]], results: dict) -> None:
        """Set every variant up, run the steps in order of priority, then the closing limits and cleanup.

        Priority: for every variant the first format (backup + restores) and the first Quix format (sink + source),
        then the memory case, then the other formats and Quix formats. When the budget runs short, what is skipped is
        the tail of that list, so each variant keeps its core rows."""
        args = self.args
        prepared: list[tuple[Dataset, dict]] = []
        try:
            for tag, value_size in variants:
                ready = self.setup(tag, value_size, results)
                if ready:
                    prepared.append(ready)
            formats = csv(args.formats)
            peer_formats = [] if args.no_peer else csv(args.peer_sink_formats)
            steps = []
            for ds, out in prepared:
                steps += [partial(self.backup_and_restores, ds, fmt, out) for fmt in formats[:1]]
                steps += [partial(self.peer_format, ds, fmt, out) for fmt in peer_formats[:1]]
            if prepared and not args.no_memory_case:
                steps.append(partial(self.memory_case, prepared[0][0], results))
            for ds, out in prepared:
                steps += [partial(self.backup_and_restores, ds, fmt, out) for fmt in formats[1:]]
                steps += [partial(self.peer_format, ds, fmt, out) for fmt in peer_formats[1:]]
            for step in steps:
                step()
            for ds, out in prepared:
                self.limits(ds, out["limits"], "after")
        finally:
            self.cleanup_topics(*self.topics)

    def setup(self, tag: str, value_size: int, results: dict) -> tuple[Dataset, dict] | None:
        """Produce a variant's topic and measure its limits (first samples)."""
        args, services, say = self.args, self.services, self.clock.say
        ds = Dataset(self.name(f"{value_size}b"), args.records, value_size, args.partitions)
        out = {
            "dataset": {
                "tag": tag,
                "topic": ds.topic,
                "records": ds.records,
                "value_size": value_size,
                "partitions": ds.partitions,
                "label": ds.label,
            },
            "limits": {},
            "backups": {},
            "restores": {},
            "peer": {},
        }
        if not self.fits("setup", f"the {ds.label} variant", then="backup"):
            return None
        say(f"{ds.label}: producing {ds.topic}")
        started = time.monotonic()
        create_topic(services, ds.topic, ds.partitions)
        self.topics.append(ds.topic)
        results["variants"].append(out)
        out["dataset"]["produce"] = produce(services.bootstrap, ds)
        out["dataset"]["payload_bytes"] = payload_bytes(ds)
        say(f"  produced at {out['dataset']['produce']['records_per_s']:,.0f} rec/s")
        self.limits(ds, out["limits"], "before")
        self.timed("setup", {"wall_s": time.monotonic() - started})
        return ds, out

    def limits(self, ds: Dataset, out: dict, when: str) -> None:
        say = self.clock.say
        result = limits.raw_consume(self.services, ds)
        out.setdefault("raw_consume", []).append(result)
        say(f"  {ds.label}: limit ({when}): raw Python consume {result['records_per_s']:,.0f} rec/s")
        if when == "before":
            out["kcat"] = limits.kcat_consume(self.services, ds)
            kcat = out["kcat"]
            say(
                f"  {ds.label}: limit: kcat "
                + (
                    "not installed"
                    if kcat is None
                    else f"{kcat['records_per_s']:,.0f} rec/s"
                    if "records_per_s" in kcat
                    else f"failed: {kcat.get('error')}"
                )
            )
        result = limits.raw_produce(self.services, ds)
        out.setdefault("raw_produce", []).append(result)
        say(f"  {ds.label}: limit ({when}): raw Python produce {result['records_per_s']:,.0f} rec/s")

    def backup_and_restores(self, ds: Dataset, fmt: str, out: dict) -> None:
        args, services, say = self.args, self.services, self.clock.say
        vtag = f"{ds.value_size}b"
        bucket = self.name(vtag, fmt)
        if not self.fits("backup", f"backup {fmt} ({ds.label})", ds=ds):
            out["backups"][fmt] = dict(SKIPPED)
            return
        create_bucket(services, bucket)
        try:
            config = product.write_properties(
                self.work / f"{vtag}-{fmt}-backup.properties",
                product.backup_properties(bucket, ds.topic, bucket, fmt, args.flush_size),
            )
            run = self.timed(
                "backup",
                product.run_cli("backup", config, services, self.work / f"{vtag}-{fmt}-backup.log", args.run_timeout),
                ds,
            )
            _check_count(run, ds.records)
            out["backups"][fmt] = run
            say(f"  {ds.label}: backup {fmt}: {_summary(run, ds.records)}")
            if not report.ok(run):
                return
            for mode in csv(args.restore_modes):
                if not self.fits("restore", f"restore {fmt} {mode} ({ds.label})", ds=ds):
                    out["restores"].setdefault(fmt, {})[mode] = dict(SKIPPED)
                    continue
                target = self.name(vtag, fmt, mode)
                config = product.write_properties(
                    self.work / f"{vtag}-{fmt}-restore-{mode}.properties",
                    product.restore_properties(target, ds.topic, target, bucket, fmt, mode),
                )
                run = self.timed(
                    "restore",
                    product.run_cli(
                        "restore", config, services, self.work / f"{vtag}-{fmt}-restore-{mode}.log", args.run_timeout
                    ),
                    ds,
                )
                _check_count(run, ds.records)
                out["restores"].setdefault(fmt, {})[mode] = run
                say(f"  {ds.label}: restore {fmt} {mode}: {_summary(run, ds.records)}")
                self.cleanup_topics(target)
        finally:
            self.cleanup_bucket(bucket)

    def peer_format(self, ds: Dataset, fmt: str, out: dict) -> None:
        """Quix FileSink in one format, then FileSource from what it wrote (if that format is to be restored)."""
        args, services, say = self.args, self.services, self.clock.say
        if self.peer_error is None:
            self.peer_error = peer.ensure_peer_venv() or ""
        if self.peer_error:
            out["peer_error"] = self.peer_error
            say(f"  Quix Streams unavailable: {self.peer_error}")
            return
        vtag = f"{ds.value_size}b"
        bucket = self.name(vtag, "quix", fmt)
        if not self.fits("quix sink", f"Quix FileSink {fmt} ({ds.label})", ds=ds):
            out["peer"].setdefault("sink", {})[fmt] = dict(SKIPPED)
            return
        create_bucket(services, bucket)
        try:
            run = self.timed(
                "quix sink",
                peer.run_peer(
                    "sink",
                    services,
                    self.work / f"{vtag}-quix-sink-{fmt}.log",
                    args.run_timeout,
                    topic=ds.topic,
                    partitions=ds.partitions,
                    records=ds.records,
                    bucket=bucket,
                    format=fmt,
                    group=self.name(vtag, "quix", fmt),
                ),
                ds,
            )
            _check_count(run, ds.records)
            out["peer"].setdefault("sink", {})[fmt] = run
            say(f"  {ds.label}: Quix FileSink {fmt}: {_summary(run, ds.records)}")
            if fmt not in csv(args.peer_source_formats) or not report.ok(run):
                return
            if not self.fits("quix source", f"Quix FileSource {fmt} ({ds.label})", ds=ds):
                out["peer"].setdefault("source", {})[fmt] = dict(SKIPPED)
                return
            target = self.name(vtag, "quix", fmt, "restored")
            create_topic(services, target, ds.partitions)
            run = self.timed(
                "quix source",
                peer.run_peer(
                    "source",
                    services,
                    self.work / f"{vtag}-quix-source-{fmt}.log",
                    args.run_timeout,
                    topic=ds.topic,
                    partitions=ds.partitions,
                    records=ds.records,
                    bucket=bucket,
                    format=fmt,
                    target=target,
                ),
                ds,
            )
            _check_count(run, ds.records)
            out["peer"].setdefault("source", {})[fmt] = run
            say(f"  {ds.label}: Quix FileSource {fmt}: {_summary(run, ds.records)}")
            self.cleanup_topics(target)
        finally:
            self.cleanup_bucket(bucket)

    def memory_case(self, ds: Dataset, results: dict) -> None:
        results["memory_case"] = self._memory_case(ds)

    def _memory_case(self, ds: Dataset) -> dict:
        args, services, say = self.args, self.services, self.clock.say
        bucket = self.name(f"{ds.value_size}b", "memory")
        self.walls.setdefault("memory", self.walls.get("backup", 0.0) * 1.5)
        if not self.fits("memory", "the memory case"):
            return {**SKIPPED, "dataset_label": f"{ds.label} ({ds.partitions} partitions)"}
        create_bucket(services, bucket)
        try:
            props = product.backup_properties(
                bucket,
                ds.topic,
                bucket,
                "json-gzip",
                ds.records + 1,
                {
                    "s3.compression.type": "none",
                    "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
                    "partition.field.name": "customer",
                    "s3.part.size": "5242880",
                },
            )
            config = product.write_properties(self.work / "memory-case.properties", props)
            run = self.timed(
                "memory", product.run_cli("backup", config, services, self.work / "memory-case.log", args.run_timeout)
            )
            _check_count(run, ds.records)
            run["dataset_label"] = f"{ds.label} ({ds.partitions} partitions)"
            say(
                f"  {ds.label}: memory case: peak RSS {run['peak_rss'] / MiB:,.0f} MiB "
                f"(PSS {run['peak_pss'] / MiB:,.0f} MiB), {_summary(run, ds.records)}"
            )
            return run
        finally:
            self.cleanup_bucket(bucket)


def _check_count(run: dict, expected: int) -> None:
    if report.ok(run) and run.get("records") != expected:
        run["incomplete"] = f"{run.get('records')} records instead of {expected}"


def _summary(run: dict, expected: int) -> str:
    if run.get("timed_out"):
        return f"TIMED OUT after {run['wall_s']:.0f}s (log {run.get('log')})"
    if run.get("error"):
        return f"FAILED (log {run.get('log')}): {str(run['error']).splitlines()[-1][:200] if run['error'] else ''}"
    if run.get("incomplete"):
        return f"INCOMPLETE: {run['incomplete']}"
    start = run.get("spark_start_s") if run.get("spark_start_s") is not None else run.get("startup_s")
    steady = expected / run["job_s"] if run.get("job_s") else 0
    return (
        f"wall {run['wall_s']:.1f}s (start {start or 0:.1f}s, steady {run.get('job_s', 0):.1f}s → "
        f"{steady:,.0f} rec/s), peak RSS {run['peak_rss'] / MiB:,.0f} MiB"
    )


# ---------------------------------------------------------------------------------------------------- context
def machine() -> dict:
    meminfo = Path("/proc/meminfo").read_text().split()
    return {
        "cpus": os.cpu_count(),
        "memory_gib": int(meminfo[1]) / 1024 / 1024,
        "load_start": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def versions() -> dict:
    out = {}
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True)
        out["kafka-s3"] = rev.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
    except OSError:
        pass
    import confluent_kafka
    import pyspark

    out["pyspark"] = pyspark.__version__
    out["confluent-kafka"] = confluent_kafka.__version__
    out["librdkafka"] = confluent_kafka.libversion()[0]
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render:
        return rerender(args.render)
    args.results_dir = args.results_dir.resolve()
    clock = Clock()
    started = dt.datetime.now(dt.UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    work = args.results_dir / f"{stamp}.tmp"  # configs and logs (git-ignored)
    work.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:6]
    results: dict = {
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join(["bench/run.py", *(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))]),
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": machine(),
        "versions": versions(),
        "variants": [],
        "logs": str(work),
    }
    clock.say(
        f"kafka-s3 benchmark {stamp}: {args.records:,} records × {args.partitions} partitions, "
        f"variants {args.variants}; logs in {work}"
    )
    try:
        services = services_up()
        results["services"] = services.describe()
        clock.say(f"services: {services.describe()}")
        bench = Bench(args, services, work, run_id, clock)
        results["skipped"] = bench.skipped
        if not args.no_peer:
            bench.peer_error = peer.ensure_peer_venv() or ""
            if not bench.peer_error:
                results["versions"]["quixstreams (peer)"] = peer.peer_version()
        results["s3_limit"] = limits.s3_throughput(
            services, bench.name("s3-limit"), args.s3_objects, args.s3_object_mib
        )
        clock.say(
            "limit: S3 "
            + ", ".join(
                f"{k}: put {v['put_mb_per_s']:,.0f} MB/s, get {v['get_mb_per_s']:,.0f} MB/s"
                for k, v in results["s3_limit"].items()
                if isinstance(v, dict)
            )
        )
        sizes = {"main": args.value_size, "small": args.small_value_size}
        unknown = [tag for tag in csv(args.variants) if tag not in sizes]
        if unknown:
            raise SystemExit(f"unknown variant(s) {', '.join(unknown)} (main, small)")
        bench.run([(tag, sizes[tag]) for tag in csv(args.variants)], results)
    except (Exception, KeyboardInterrupt) as exc:
        results["aborted"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    results["machine"]["load_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    results["duration_s"] = time.monotonic() - clock.started
    results.setdefault("services", {})
    json_path = args.results_dir / f"{stamp}.json"
    md_path = args.results_dir / f"{stamp}.md"
    try:
        report.derive(results)
    finally:  # the raw measurements are kept even if the report has a bug (re-render with --render)
        json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    markdown = report.render(results)
    md_path.write_text(markdown)
    print("\n" + markdown)
    clock.say(f"wrote {md_path} and .json")
    return 1 if results.get("aborted") else 0


def rerender(path: Path) -> int:
    """Recompute the derived numbers and the Markdown of a saved result (after a change to report.py)."""
    results = json.loads(path.read_text())
    report.derive(results)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(report.render(results))
    print(f"wrote {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
