"""``make bench``: kafka-s3's benchmark. Writes ``bench/results/<UTC timestamp>.md`` and ``.json``.

One run, on the local services (or external ones named by ``KAFKA_BOOTSTRAP_SERVERS`` / ``AWS_ENDPOINT_URL_S3``):

1. datasets: ``--records`` records over ``--partitions`` partitions with keys and 2 headers, one topic per variant
   (``main``: ``--value-size`` bytes, ``small``: ``--small-value-size``), produced by a fast idempotent producer;
2. limits on the same data: raw confluent-kafka consume, kcat consume, raw produce into a fresh topic (raw consume
   and produce are sampled before and after the variant's runs), S3 multipart put/get of large objects;
3. ``kafka-s3 backup --once`` per format, then ``kafka-s3 restore`` of each backup into fresh topics, exactly-once
   and at-least-once; every run is a CLI subprocess with its own bucket/config/group, whole-tree RSS sampled;
4. the peer, Quix Streams FileSink/FileSource (``bench/peer_quix.py`` in ``.venv-peer``), on the same topic and S3;
5. the memory case: Field partitioner with 1,000 files open at once, ``s3.part.size=5242880``;
6. the scale curves (records, partitions), ``--standalone`` beside ``local[*]``, the point lookups
   (``bench/point_lookups.py``) and the small runs over Spark Connect (``bench/small_runs.py``).

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
import statistics
import subprocess
import sys
import time
import traceback
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cluster
import curve
import limits
import partitions as many_partitions
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
    kafka_kind_default,
    remove_bucket,
    services_up,
    stop_own_kafka,
)
from dataset import Dataset, payload_bytes, produce

RESULTS = Path(__file__).resolve().parent / "results"
# Settings that bound a backup worker's memory below the defaults (per worker: 16 MiB of parts in memory, the rest
# spilled to disk; librdkafka's prefetch queue 8 MiB).
BOUNDED_MEMORY = {
    "upload.buffer.memory.total.bytes": "16777216",
    "consumer.override.queued.max.messages.kbytes": "8192",
}


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
    p.add_argument(
        "--memory-only",
        action="store_true",
        help="only the memory case (with the defaults, then with --memory-settings) on the main variant's topic: no "
        "limits, warm-up, formats, peer, curves or other steps",
    )
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
    p.add_argument(
        "--kafka",
        choices=["apache", "noida"],
        default=None,
        help="the broker: apache (what the issue measures on) or noida. The shared services' broker when it is of "
        "that kind, else one of the bench's own (the shared one is never stopped nor swapped). Default: "
        "KAFKA_S3_DEV_KAFKA, else the broker the services run, else apache",
    )
    p.add_argument(
        "--own-kafka",
        action="store_true",
        help="always use a broker of the bench's own (Apache Kafka on port 21292, noida-db on 21192; state in the "
        "run's .tmp directory, stopped at the end): immune to other sessions restarting the shared one",
    )
    p.add_argument(
        "--own-kafka-port",
        type=int,
        help="port of the bench's own broker (default 21292 for Apache Kafka, 21192 for noida; Apache Kafka also "
        "takes the port + 1), to run two benches at once",
    )
    p.add_argument(
        "--curve-records",
        default="100000,1000000,10000000",
        help="scale curve: record counts (default 100000,1000000,10000000; '' for none)",
    )
    p.add_argument(
        "--curve-formats",
        default=",".join(product.FORMATS),
        help="scale curve over records: formats backed up at every point (default all)",
    )
    p.add_argument(
        "--curve-restore-modes",
        default="",
        help="scale curves: also restore every curve backup in these modes (eos, alo; default none)",
    )
    p.add_argument(
        "--curve-partitions",
        default="1,4,16,64",
        help="scale curve: partition counts (default 1,4,16,64; '' for none)",
    )
    p.add_argument(
        "--curve-partition-records",
        type=int,
        default=1_000_000,
        help="scale curve over partitions: records per point (default 1,000,000)",
    )
    p.add_argument(
        "--curve-partition-format", default="bytearray", help="scale curve over partitions: format (default bytearray)"
    )
    p.add_argument("--no-curve", action="store_true", help="skip both scale curves")
    p.add_argument(
        "--standalone",
        action="store_true",
        help="also run the main variant's first format (backup + restores) on a Spark standalone cluster of the "
        "bench's own (master + 2 workers of 1 core on this machine), beside local[*]",
    )
    p.add_argument(
        "--memory-settings",
        default=",".join(f"{k}={v}" for k, v in BOUNDED_MEMORY.items()),
        help="the memory case again with these settings (key=value,...; '' for none). Default: the upload budget "
        "and librdkafka's prefetch queue lowered, the bounds bench/README.md's Memory section measured",
    )
    p.add_argument(
        "--connect-rounds",
        type=int,
        default=3,
        help="small runs over Spark Connect: rounds of a 4-record backup + restore through a Connect server of the "
        "bench's own, alternating with local[*] (default 3; 0: skip)",
    )
    p.add_argument("--connect-port", type=int, default=27502, help="port of that Connect server (default 27502)")
    p.add_argument(
        "--lookup-records",
        type=int,
        default=200_000,
        help="point lookups: records backed up (Avro envelope, 4 partitions) before timing ten offsets read with the "
        "reader's offset options beside a where over a full scan (default 200,000; 0: skip)",
    )
    p.add_argument(
        "--compact-chunks",
        type=int,
        default=10_000,
        help="compaction: small chunks backed up (10 records each, 4 partitions) before timing restore --dry-run, "
        "kafka-s3 compact, and restore --dry-run again (default 10,000; 0: skip)",
    )
    p.add_argument(
        "--partition-counts",
        default="1,10,100,1000",
        help="many partitions: partition counts a backup --once and a restore are timed at, each beside the same "
        "records from 4 partitions (bench/partitions.py; default 1,10,100,1000; '': skip)",
    )
    p.add_argument(
        "--partition-records",
        default="10,100",
        help="many partitions: records per partition at each count (default 10,100)",
    )
    p.add_argument(
        "--follow-minutes",
        type=float,
        default=10,
        help="follow mode: minutes of steady production (10,000 rec/s of 1 KiB over 100 partitions) while a following "
        "backup with rotate.interval.ms=10000 runs, then its idle cycles (bench/follow.py; default 10; 0: skip)",
    )
    p.add_argument("--keep", action="store_true", help="keep the topics and buckets (default: deleted after use)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 20,000 records, main variant only, flush.size 5,000, 2 × 16 MiB S3 objects, curves of "
        "10k/50k/100k records and 1/4/16 partitions × 50k records, 1 Connect round, 20,000 records for the point "
        "lookups (unless given)",
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
        if "--curve-records" not in given:
            args.curve_records = "10000,50000,100000"
        if "--curve-partitions" not in given:
            args.curve_partitions = "1,4,16"
        if "--curve-partition-records" not in given:
            args.curve_partition_records = 50_000
        if "--connect-rounds" not in given:
            args.connect_rounds = 1
        if "--lookup-records" not in given:
            args.lookup_records = 20_000
        if "--compact-chunks" not in given:
            args.compact_chunks = 1_000
        if "--partition-counts" not in given:
            args.partition_counts = "1,10,100"
        if "--follow-minutes" not in given:
            args.follow_minutes = 1
    if args.memory_only:
        args.variants = "main"
    if args.kafka is None:
        args.kafka = kafka_kind_default()
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
        self.tiny: dict[tuple, Dataset] = {}  # (value size, partitions, tag) -> the 4-record topic of that shape
        self.baselines: dict[tuple, tuple[dict, dict]] = {}  # (value size, partitions, format, master) -> runs
        self.baseline_runs: list[dict] = []  # every baseline, for the report (the small-runs target)
        self.curve_points = 0

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
            if args.memory_only:
                for ds, _ in prepared[:1]:
                    self.memory_case(ds, results)
                return
            formats = csv(args.formats)
            if prepared:
                self.warm_up(prepared[0][0], formats[0], results)
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
            if prepared and args.standalone:
                steps.append(partial(self.standalone, prepared[0][0], results))
            if not args.no_curve:
                steps += [partial(self.curve_records, results), partial(self.curve_partitions, results)]
            if args.lookup_records > 0:
                steps.append(partial(self.point_lookups, results))
            if args.compact_chunks > 0:
                steps.append(partial(self.compaction, results))
            if csv(args.partition_counts):
                steps.append(partial(self.many_partitions, results))
            if args.follow_minutes > 0:
                steps.append(partial(self.follow_mode, results))
            if args.connect_rounds > 0:  # last: its server's JVM and workers stay up until the step ends
                steps.append(partial(self.connect_runs, results))
            for step in steps:
                step()
            for ds, out in prepared:
                self.limits(ds, out["limits"], "after")
        finally:
            self.cleanup_topics(*self.topics)

    def warm_up(self, ds: Dataset, fmt: str, results: dict) -> None:
        """One 4-record backup before anything is timed, not counted. The run's first Spark command pays one-time
        costs (right after the datasets were produced and the limits measured): in three full runs it took 13.4–16.7 s
        against 9–11 s for the same command later, and as the ByteArray baseline it flattered that format's rate."""
        tiny = self.tiny_dataset(ds.value_size, ds.partitions, tag="warm-up")  # not the baseline's topic: its own
        run, _ = self._pair(tiny, fmt, [], None, kind="warm-up")  # bucket, log and consumer group
        results["warm_up"] = {"format": fmt, "dataset": tiny.label, "wall_s": run.get("wall_s")}

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
        if not args.memory_only:
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
        if not self.fits("backup", f"backup {fmt} ({ds.label})", ds=ds):
            out["backups"][fmt] = dict(SKIPPED)
            return
        modes = csv(self.args.restore_modes)
        out["backups"][fmt], restores = self.pair(ds, fmt, modes)
        if restores:
            out["restores"][fmt] = restores

    def pair(self, ds: Dataset, fmt: str, modes: list[str], master: str | None = None) -> tuple[dict, dict]:
        """``kafka-s3 backup --once`` of ``ds`` in ``fmt``, then a restore of that backup per mode; each run carries
        the wall time of the same command on the 4-record topic of the same shape (``baseline``)."""
        base = self.baseline(ds, fmt, modes, master)
        backup, restores = self._pair(ds, fmt, modes, master)
        _attach(backup, base[0])
        for mode, run in restores.items():
            _attach(run, base[1].get(mode))
        return backup, restores

    def baseline(self, ds: Dataset, fmt: str, modes: list[str], master: str | None = None) -> tuple[dict, dict]:
        """The same commands on a 4-record topic with the same value size and partitions (produced once), so that
        their walls can be subtracted: what remains is what the records cost (planning, listing, commits and the
        workers' start count; only the fixed start-up is taken out)."""
        key = (ds.value_size, ds.partitions, fmt, master or "local[*]")
        done = self.baselines.get(key)
        if done is None or any(m not in done[1] for m in modes):
            tiny = self.tiny_dataset(ds.value_size, ds.partitions)
            if not self.fits("baseline", f"4-record baseline of {fmt} ({tiny.label}, {ds.partitions} partitions)"):
                return {}, {}
            done = self._pair(tiny, fmt, modes, master, kind="baseline")
            self.baselines[key] = done
            self.baseline_runs.append(
                {"dataset": tiny.label, "partitions": ds.partitions, "format": fmt, "master": master or "local[*]"}
                | {"backup": done[0], "restores": done[1]}
            )
        return done

    def tiny_dataset(self, value_size: int, partitions: int, tag: str = "r4") -> Dataset:
        """The 4-record topic of a shape; another ``tag`` gives another topic (and so other bucket and log names)."""
        key = (value_size, partitions, tag)
        if key not in self.tiny:
            ds = Dataset(self.name(f"{value_size}b", tag, f"p{partitions}"), TINY_RECORDS, value_size, partitions)
            create_topic(self.services, ds.topic, ds.partitions)
            self.topics.append(ds.topic)
            produce(self.services.bootstrap, ds)
            self.tiny[key] = ds
        return self.tiny[key]

    def _pair(self, ds: Dataset, fmt: str, modes: list[str], master: str | None, kind: str = "") -> tuple[dict, dict]:
        args, services, say = self.args, self.services, self.clock.say
        slug = _slug(ds, master)
        bucket = self.name(slug, fmt)
        heading = f"{ds.label} ({_where(ds, master)}): {kind + ' ' if kind else ''}"  # what each log line starts with
        restores: dict = {}
        create_bucket(services, bucket)
        try:
            config = product.write_properties(
                self.work / f"{slug}-{fmt}-backup.properties",
                product.backup_properties(bucket, ds.topic, bucket, fmt, args.flush_size),
            )
            backup = self.timed(
                kind or "backup",
                product.run_cli(
                    "backup", config, services, self.work / f"{slug}-{fmt}-backup.log", args.run_timeout, master
                ),
                ds,
            )
            _check_count(backup, ds.records)
            say(f"  {heading}backup {fmt}: {_summary(backup, ds.records)}")
            if not report.ok(backup):
                return backup, restores
            for mode in modes:
                if not kind and not self.fits("restore", f"restore {fmt} {mode} ({ds.label})", ds=ds):
                    restores[mode] = dict(SKIPPED)
                    continue
                target = self.name(slug, fmt, mode)
                config = product.write_properties(
                    self.work / f"{slug}-{fmt}-restore-{mode}.properties",
                    product.restore_properties(target, ds.topic, target, bucket, fmt, mode),
                )
                run = self.timed(
                    kind or "restore",
                    product.run_cli(
                        "restore",
                        config,
                        services,
                        self.work / f"{slug}-{fmt}-restore-{mode}.log",
                        args.run_timeout,
                        master,
                    ),
                    ds,
                )
                _check_count(run, ds.records)
                restores[mode] = run
                say(f"  {heading}restore {fmt} {mode}: {_summary(run, ds.records)}")
                self.cleanup_topics(target)
        finally:
            self.cleanup_bucket(bucket)
        return backup, restores

    # ------------------------------------------------------------------------------------------------ scale curves
    def curve_records(self, results: dict) -> None:
        """Backups (and restores, ``--curve-restore-modes``) of every curve format at each record count."""
        args = self.args
        out = results.setdefault("curve", {}).setdefault("records", [])
        for records in [int(n) for n in csv(args.curve_records)]:
            point = self.curve_point(records, args.partitions, csv(args.curve_formats))
            if point:
                out.append(point)

    def curve_partitions(self, results: dict) -> None:
        args = self.args
        out = results.setdefault("curve", {}).setdefault("partitions", [])
        for partitions in [int(n) for n in csv(args.curve_partitions)]:
            point = self.curve_point(args.curve_partition_records, partitions, [args.curve_partition_format])
            if point:
                out.append(point)

    def curve_point(self, records: int, partitions: int, formats: list[str]) -> dict | None:
        args, say = self.args, self.clock.say
        self.curve_points += 1  # in the names: the two curves may share a shape (records, partitions)
        ds = Dataset(
            self.name(f"{args.value_size}b", f"r{records}", f"p{partitions}", f"c{self.curve_points}"),
            records,
            args.value_size,
            partitions,
        )
        if not self.fits("setup", f"curve point {ds.label}, {partitions} partitions", then="backup"):
            return None
        say(f"curve: {ds.label}, {partitions} partitions: producing {ds.topic}")
        started = time.monotonic()
        create_topic(self.services, ds.topic, partitions)
        point = {
            "records": records,
            "partitions": partitions,
            "value_size": args.value_size,
            "label": ds.label,
            "produce": produce(self.services.bootstrap, ds),
            "payload_bytes": payload_bytes(ds),
            "runs": {},
        }
        self.timed("setup", {"wall_s": time.monotonic() - started})
        try:
            for fmt in formats:
                if not self.fits("backup", f"curve backup {fmt} ({ds.label}, {partitions} partitions)", ds=ds):
                    point["runs"][fmt] = {"backup": dict(SKIPPED), "restores": {}}
                    continue
                backup, restores = self.pair(ds, fmt, csv(args.curve_restore_modes))
                point["runs"][fmt] = {"backup": backup, "restores": restores}
        finally:
            self.cleanup_topics(ds.topic)
        return point

    def standalone(self, ds: Dataset, results: dict) -> None:
        """The main variant's first format (backup + restores) on a standalone cluster of the bench's own; its
        ``local[*]`` twin is the main table's row."""
        fmt = csv(self.args.formats)[0]
        out: dict = {"format": fmt, "dataset": ds.label, "partitions": ds.partitions}
        results["standalone"] = out
        if not self.fits("backup", f"standalone backup {fmt}", then="restore", ds=ds):
            out.update(SKIPPED)
            return
        self.clock.say(f"standalone: starting a master and {cluster.WORKERS} workers")
        try:
            spark = cluster.up(self.work / "spark", env=self.services.environ())
        except RuntimeError as exc:
            out["error"] = str(exc)
            self.clock.say(f"  standalone cluster failed: {exc}")
            return
        try:
            out.update({"master": spark.master_url, "workers": spark.workers, "worker_cores": spark.worker_cores})
            out["backup"], out["restores"] = self.pair(ds, fmt, csv(self.args.restore_modes), spark.master_url)
        finally:
            cluster.down(spark)

    def script(self, step: str, script: str, args: list[str], out: dict, timeout: float | None = None) -> bool:
        """Run ``bench/<script>`` in a process of its own on the bench's services (its JVM stays out of this
        process), timed as ``step``; its JSON results go into ``out``, or ``out["error"]`` says why there are none."""
        path, log = self.work / f"{step}.json", self.work / f"{step}.log"
        command = [sys.executable, str(Path(__file__).with_name(script)), *args, "--json-out", str(path)]
        started = time.monotonic()
        with open(log, "w") as sink:
            try:
                code = subprocess.run(
                    command,
                    env=self.services.environ(),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    timeout=timeout or self.args.run_timeout,
                    cwd=ROOT,
                    check=False,
                ).returncode
            except subprocess.TimeoutExpired:
                code = None
        self.timed(step, {"wall_s": time.monotonic() - started})
        if code == 0:
            out.update(json.loads(path.read_text()))
            return True
        out["error"] = f"{'timed out' if code is None else f'exit {code}'} (log {log})"
        return False

    def point_lookups(self, results: dict) -> None:
        """Target 5: ``bench/point_lookups.py`` in a process of its own (its Spark session's JVM stays out of the
        bench's process), on the same services."""
        out: dict = {}
        results["lookups"] = out
        if not self.fits("lookups", "the point lookups"):
            out.update(SKIPPED)
            return
        self.clock.say(f"point lookups: {self.args.lookup_records:,} records, bounded read beside a full scan")
        if self.script("lookups", "point_lookups.py", ["--records", str(self.args.lookup_records)], out):
            cases = report.lookup_medians(out)
            self.clock.say("  " + ", ".join(f"{case}: {seconds:.2f} s" for case, seconds in cases.items()))
        else:
            self.clock.say(f"  point lookups failed: {out['error']}")

    def compaction(self, results: dict) -> None:
        """``bench/compaction.py`` in a process of its own: compaction throughput, and restore planning time on
        ``--compact-chunks`` small chunks before and after it."""
        out: dict = {}
        results["compaction"] = out
        if not self.fits("compaction", "the compaction"):
            out.update(SKIPPED)
            return
        self.clock.say(f"compaction: {self.args.compact_chunks:,} small chunks, restore plans before and after")
        if self.script("compaction", "compaction.py", ["--chunks", str(self.args.compact_chunks)], out):
            done = out["compact"]
            self.clock.say(
                f"  compact: {done['records'] / done['wall_s']:,.0f} records/s; restore plan "
                f"{statistics.median(out['plan_before_s']):.2f} s → {statistics.median(out['plan_after_s']):.2f} s"
            )
        else:
            self.clock.say(f"  compaction failed: {out['error']}")

    def follow_mode(self, results: dict) -> None:
        """Issue 30's target 5: ``bench/follow.py`` in a process of its own, produce → durable latency of a following
        backup under a steady load, then the cost of its idle cycles."""
        out: dict = {}
        results["follow"] = out
        minutes = self.args.follow_minutes
        self.walls.setdefault("follow", minutes * 60 + 600)  # production, Spark's start, the drain, idle cycles
        if not self.fits("follow", "the follow-mode run"):
            out.update(SKIPPED)
            return
        self.clock.say(f"follow mode: {minutes:g} min of 10,000 rec/s over 100 partitions, then idle cycles")
        arguments = ["--minutes", str(minutes), "--kafka", self.services.kafka_kind]
        if self.script("follow", "follow.py", arguments, out, timeout=self.args.run_timeout + minutes * 60):
            durable = (out.get("latency") or {}).get("durable") or {}
            idle = out.get("idle") or {}
            self.clock.say(
                f"  p99 produce → durable {durable.get('p99')} s (target {out.get('target_s')} s); idle cycle "
                f"{idle.get('wall_s')} s wall, {idle.get('cpu_s')} CPU-s"
            )
        else:
            self.clock.say(f"  follow mode failed: {out['error']}")

    def many_partitions(self, results: dict) -> None:
        """Issue 30's target 1: ``bench/partitions.py`` in a process of its own, one backup and one restore per
        partition count, the per-partition overhead as the slope, beside the same records from 4 partitions."""
        out: dict = {}
        results["partitions"] = out
        if not self.fits("partitions", "the many-partitions runs"):
            out.update(SKIPPED)
            return
        counts, per = self.args.partition_counts, self.args.partition_records
        self.clock.say(f"many partitions: {counts} partitions × {per} records, backup and restore")
        args = ["--partitions", counts, "--records", per, "--kafka", self.services.kafka_kind]
        if self.script("partitions", "partitions.py", args, out):
            for row in many_partitions.overheads(out):
                self.clock.say(
                    f"  {row['kind']}, {row['records_per_partition']} records per partition: "
                    f"{row['wall_s_per_partition'] * 1000:.0f} ms per partition (wall slope)"
                )
        else:
            self.clock.say(f"  many partitions failed: {out['error']}")

    def connect_runs(self, results: dict) -> None:
        """Target 4 over Spark Connect: 4-record backups and restores through a Connect server of the bench's own
        (started here, stopped at the end), alternating with the same commands on ``local[*]``."""
        import small_runs
        from tools.services import start_spark_connect, stop_spark_connect

        out: dict = {}
        results["connect"] = out
        if not self.fits("connect", "the small runs over Spark Connect"):
            out.update(SKIPPED)
            return
        directory = self.work / "spark-connect"
        started = time.monotonic()
        try:
            remote = start_spark_connect(self.args.connect_port, directory)
            out["server_start_s"] = time.monotonic() - started
            self.clock.say(f"Spark Connect: server {remote} up in {out['server_start_s']:.0f}s")
            out.update(small_runs.measure(self.services, self.work, "local[*]", remote, self.args.connect_rounds))
            for mode, medians in report.connect_medians(out).items():
                self.clock.say(
                    f"  {mode}: median walls backup {medians['backup']['wall']:.1f} s, "
                    f"restore {medians['restore']['wall']:.1f} s"
                )
        except (RuntimeError, SystemExit) as exc:  # start_spark_connect exits on a server that does not start
            out["error"] = str(exc)
            self.clock.say(f"  small runs over Spark Connect failed: {str(exc).splitlines()[0]}")
        finally:
            stop_spark_connect(directory)
            self.timed("connect", {"wall_s": time.monotonic() - started})

    def peer_format(self, ds: Dataset, fmt: str, out: dict) -> None:
        """Quix FileSink in one format, then FileSource from what it wrote (if that format is to be restored); the
        same on the 4-record topic for the baselines."""
        if self.peer_error is None:
            self.peer_error = peer.ensure_peer_venv() or ""
        if self.peer_error:
            out["peer_error"] = self.peer_error
            self.clock.say(f"  Quix Streams unavailable: {self.peer_error}")
            return
        if not self.fits("quix sink", f"Quix FileSink {fmt} ({ds.label})", ds=ds):
            out["peer"].setdefault("sink", {})[fmt] = dict(SKIPPED)
            return
        tiny = self.tiny_dataset(ds.value_size, ds.partitions)
        base_sink, base_source = self._peer(tiny, fmt, "baseline")
        sink, source = self._peer(ds, fmt)
        _attach(sink, base_sink)
        out["peer"].setdefault("sink", {})[fmt] = sink
        if source is not None:
            _attach(source, base_source)
            out["peer"].setdefault("source", {})[fmt] = source

    def _peer(self, ds: Dataset, fmt: str, kind: str = "") -> tuple[dict, dict | None]:
        args, services, say = self.args, self.services, self.clock.say
        slug = _slug(ds, None)
        bucket = self.name(slug, "quix", fmt)
        create_bucket(services, bucket)
        source = None
        try:
            sink = self.timed(
                kind or "quix sink",
                peer.run_peer(
                    "sink",
                    services,
                    self.work / f"{slug}-quix-sink-{fmt}.log",
                    args.run_timeout,
                    topic=ds.topic,
                    partitions=ds.partitions,
                    records=ds.records,
                    bucket=bucket,
                    format=fmt,
                    group=self.name(slug, "quix", fmt),
                ),
                ds,
            )
            _check_count(sink, ds.records)
            say(f"  {ds.label}: Quix FileSink {fmt}: {_summary(sink, ds.records)}")
            if fmt not in csv(args.peer_source_formats) or not report.ok(sink):
                return sink, None
            if not kind and not self.fits("quix source", f"Quix FileSource {fmt} ({ds.label})", ds=ds):
                return sink, dict(SKIPPED)
            target = self.name(slug, "quix", fmt, "restored")
            create_topic(services, target, ds.partitions)
            source = self.timed(
                kind or "quix source",
                peer.run_peer(
                    "source",
                    services,
                    self.work / f"{slug}-quix-source-{fmt}.log",
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
            _check_count(source, ds.records)
            say(f"  {ds.label}: Quix FileSource {fmt}: {_summary(source, ds.records)}")
            self.cleanup_topics(target)
            return sink, source
        finally:
            self.cleanup_bucket(bucket)

    def memory_case(self, ds: Dataset, results: dict) -> None:
        results["memory_case"] = self._memory_case(ds)
        settings = dict(item.split("=", 1) for item in csv(self.args.memory_settings))
        if settings:
            results["memory_case_bounded"] = {**self._memory_case(ds, settings), "settings": settings}

    def _memory_case(self, ds: Dataset, settings: dict[str, str] | None = None) -> dict:
        args, services, say = self.args, self.services, self.clock.say
        name = "memory-bounded" if settings else "memory"
        bucket = self.name(f"{ds.value_size}b", name)
        self.walls.setdefault("memory", self.walls.get("backup", 0.0) * 1.5)
        if not self.fits("memory", f"the {name.replace('-', ' ')} case"):
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
                    **(settings or {}),
                },
            )
            config = product.write_properties(self.work / f"{name}-case.properties", props)
            run = self.timed(
                "memory", product.run_cli("backup", config, services, self.work / f"{name}-case.log", args.run_timeout)
            )
            _check_count(run, ds.records)
            run["dataset_label"] = f"{ds.label} ({ds.partitions} partitions)"
            say(
                f"  {ds.label}: {name.replace('-', ' ')} case: peak RSS {run['peak_rss'] / MiB:,.0f} MiB "
                f"(PSS {run['peak_pss'] / MiB:,.0f} MiB), {_summary(run, ds.records)}"
            )
            return run
        finally:
            self.cleanup_bucket(bucket)


TINY_RECORDS = 4  # the baseline topic's size (the "4-record topic")


def _attach(run: dict, base: dict | None) -> None:
    """Keep the wall of the same command on the 4-record topic in the run (the rate subtracts it)."""
    if base and report.ok(base):
        run["baseline"] = {
            "wall_s": base.get("done_s") or base["wall_s"],
            "records": base.get("records"),
            "log": base.get("log"),
        }
    elif base is not None:
        run["baseline"] = {"error": "the 4-record run " + ("was skipped" if base.get("skipped") else "failed")}


def _slug(ds: Dataset, master: str | None) -> str:
    """A short name, unique per dataset (and master), for file, bucket and topic names: the dataset topic's own suffix
    (``1024b``, ``1024b-r4-p4``, ``1024b-r50000-p16``...), as two datasets of the same shape may exist (the main
    variant and a curve point; the two curves' shared point): their logs must not append to one file."""
    return ds.topic.split("-", 4)[4] + ("-sa" if master else "")


def _where(ds: Dataset, master: str | None) -> str:
    return f"{ds.partitions} partitions, {master or 'local[*]'}"


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


def measure_context(args, bench: Bench, services: Services, results: dict, clock: Clock) -> None:
    """The peer's environment and the S3 put/get limit, before the variants (not needed by ``--memory-only``)."""
    if not args.no_peer:
        bench.peer_error = peer.ensure_peer_venv() or ""
        if not bench.peer_error:
            results["versions"]["quixstreams (peer)"] = peer.peer_version()
    results["s3_limit"] = limits.s3_throughput(services, bench.name("s3-limit"), args.s3_objects, args.s3_object_mib)
    clock.say(
        "limit: S3 "
        + ", ".join(
            f"{k}: put {v['put_mb_per_s']:,.0f} MB/s, get {v['get_mb_per_s']:,.0f} MB/s"
            for k, v in results["s3_limit"].items()
            if isinstance(v, dict)
        )
    )


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
        services = services_up(args.kafka, work, args.own_kafka, args.own_kafka_port)
        results["services"] = services.describe()
        clock.say(f"services: {services.describe()}")
        bench = Bench(args, services, work, run_id, clock)
        results["skipped"] = bench.skipped
        results["baselines"] = bench.baseline_runs
        if not args.memory_only:
            measure_context(args, bench, services, results, clock)
        sizes = {"main": args.value_size, "small": args.small_value_size}
        unknown = [tag for tag in csv(args.variants) if tag not in sizes]
        if unknown:
            raise SystemExit(f"unknown variant(s) {', '.join(unknown)} (main, small)")
        bench.run([(tag, sizes[tag]) for tag in csv(args.variants)], results)
    except (Exception, KeyboardInterrupt) as exc:
        results["aborted"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    finally:
        stop_own_kafka(work)
    results["machine"]["load_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    results["duration_s"] = time.monotonic() - clock.started
    results.setdefault("services", {})
    json_path = args.results_dir / f"{stamp}.json"
    md_path = args.results_dir / f"{stamp}.md"
    try:
        report.derive(results)
    finally:  # the raw measurements are kept even if the report has a bug (re-render with --render)
        json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    if curve.plot(results, args.results_dir / f"{stamp}-curve.png"):
        results["curve_png"] = f"{stamp}-curve.png"
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
    png = path.with_name(path.stem + "-curve.png")
    if curve.plot(results, png):
        results["curve_png"] = png.name
    path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(report.render(results))
    print(f"wrote {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
