"""Follow mode (issue 30, target 5): produce → durable latency under a steady load, and the cost of an idle cycle.

    KAFKA_S3_SERVICES_DIR=.services .venv/bin/python bench/follow.py [--minutes 1] [--rate 10000] [--partitions 100]

1. **Latency.** A following ``kafka-s3 backup`` (no ``--once``) runs on a fresh topic of ``--partitions`` partitions
   with ``rotate.interval.ms`` (``--rotate-interval-ms``, default 10,000; the hourly TimeBasedPartitioner with the
   Record extractor, as ``rotate.interval.ms`` applies with time-based partitioners only) and a ``flush.size`` no
   partition reaches, so only time closes objects. Once its first cycle has ended (Spark is up), a confluent-kafka
   producer in this process produces ``--rate`` records/s (``--value-size`` B values, round robin over the
   partitions, paced every 10 ms) for ``--minutes``; then for one more rotation interval plus a margin, so the
   measured records' objects close. Each record's produce time is its Kafka timestamp, set by this process at
   ``produce()``; its offset is its rank in its partition (a fresh topic, an idempotent producer: checked against
   the end offsets). Each object's durable time is when this process reads the backup's
   ``committed s3://… records=N offsets=A..B`` line (logged by the driver as the task tells it the upload is
   complete; one clock, no S3 timestamps of 1 s resolution), and its cycle's commit (the group's offsets moved:
   what ``kafka-s3 status`` and a restore's committed end see) when the cycle's summary line is read. Latency of a
   record = durable time of the object holding it − its produce time; percentiles over every record of the window.
2. **Idle cycle.** The same backup once nothing new arrives (the producer stopped; its last chunks stay open, as
   Confluent's time rule closes a file only on a later record): over ``--idle-cycles`` cycles, the mean wall of a
   cycle (the backup's own ``cycle_duration_seconds`` metric) and the CPU-seconds of the whole process tree
   (``/proc``: driver, JVM, Python workers) per cycle, and how many Spark jobs those cycles started (from the log).

Writes ``bench/results/<stamp>-follow.md`` and ``.json`` (``--json-out``: the measurements only, for bench/run.py).
Nothing is asserted: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

import product
from common import (
    KAFKA_LABELS,
    ROOT,
    Services,
    create_bucket,
    create_topic,
    delete_topics,
    end_offsets,
    kafka_kind_default,
    kill_group,
    process_kind,
    process_tree,
    remove_bucket,
    services_up,
    stop_own_kafka,
)

RESULTS = Path(__file__).resolve().parent / "results"
TICK_S = 0.01  # the producer's pacing step
TARGET_MARGIN_S = 3.0  # issue 30 target 5: p99 ≤ rotate interval + 3 s
IDLE_WALL_TARGET_S = 0.5
IDLE_CPU_TARGET_S = 0.2
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
COMMITTED = "committed "
CYCLE = re.compile(r"^cycle (\d+): (\d+) partitions, (\d+) records")
JOB = re.compile(r"^cycle (\d+): spark job ran in ([\d.]+)s")
FORMAT_PROPERTIES = {
    "bytearray": {"format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"},
    "parquet": {"format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat", "parquet.codec": "snappy"},
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="minutes of steady production measured (default 10)")
    p.add_argument("--rate", type=int, default=10_000, help="records per second produced (default 10,000)")
    p.add_argument("--partitions", type=int, default=100, help="partitions of the topic (default 100)")
    p.add_argument("--value-size", type=int, default=1024, help="value bytes (default 1024)")
    p.add_argument("--format", choices=sorted(FORMAT_PROPERTIES), default="bytearray", help="default bytearray")
    p.add_argument("--rotate-interval-ms", type=int, default=10_000, help="rotate.interval.ms (default 10,000)")
    p.add_argument(
        "--cycle-interval-ms",
        type=int,
        default=None,
        help="cycle.interval.ms of the backup (default: the product's default)",
    )
    p.add_argument("--idle-cycles", type=int, default=10, help="idle cycles measured (default 10; 0: skip)")
    p.add_argument("--kafka", choices=sorted(KAFKA_LABELS), help="broker kind (default: the services' broker)")
    p.add_argument(
        "--own-kafka",
        action="store_true",
        help="a broker of the bench's own (immune to others restarting the shared one; stopped at the end)",
    )
    p.add_argument("--own-port", type=int, default=21492, help="port of a broker of the bench's own, if one starts")
    p.add_argument("--start-timeout", type=float, default=600, help="seconds the backup's first job may take")
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=300,
        help="seconds the measured records may take to become durable after production ends (default 300): the "
        "records still not durable then are reported as such",
    )
    p.add_argument("--keep", action="store_true", help="keep the topic and bucket")
    p.add_argument("--json-out", type=Path, help="write the measurements here (no report): bench/run.py's step")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A harness's timeout (SIGTERM) still stops the backup and the bench's own broker (the finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    work = RESULTS / f"{stamp}-follow.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(args.kafka or kafka_kind_default(), work, args.own_kafka, args.own_port)
    try:
        results = {"stamp": stamp, "services": services.describe(), **measure(args, services, work, stamp.lower())}
    finally:
        stop_own_kafka(work)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
        return 0
    (RESULTS / f"{stamp}-follow.json").write_text(json.dumps(results, indent=2) + "\n")
    md = RESULTS / f"{stamp}-follow.md"
    md.write_text(render(results))
    print(md.read_text())
    return 0


# ---------------------------------------------------------------------------------------------------- the backup
class Follower:
    """``kafka-s3 backup`` following the topic, in its own process group; its stderr (JSON log lines) read as it
    comes, each line stamped with this process's clock on arrival."""

    def __init__(self, config: Path, services: Services, log: Path, metrics_port: int):
        self.log_path = log
        self.metrics_port = metrics_port
        self.objects: list[dict] = []  # every "committed" line: partition, first, last, records, at (arrival)
        self.cycles: list[dict] = []  # every cycle summary: cycle, records, at (arrival)
        self.jobs: list[dict] = []  # every "spark job ran" line: cycle, seconds, at
        self.lock = threading.Lock()
        command = [
            sys.executable,
            "-m",
            "kafka_s3.cli",
            "--log-format",
            "json",
            "backup",
            "-c",
            str(config),
            "--no-progress",
            "--metrics-port",
            str(metrics_port),
        ]
        self.sink = open(log, "w", buffering=1)  # noqa: SIM115 - closed by stop(); a line at a time
        self.proc = subprocess.Popen(
            command,
            env=services.environ(),
            cwd=ROOT,
            stdout=self.sink,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            at = time.time()
            line = raw.decode(errors="replace")
            self.sink.write(line)
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if not isinstance(doc, dict):
                continue
            message = str(doc.get("message", ""))
            with self.lock:
                if message.startswith(COMMITTED) and "first_offset" in doc:
                    self.objects.append(
                        {
                            "partition": int(doc["partition"]),
                            "first": int(doc["first_offset"]),
                            "last": int(doc["last_offset"]),
                            "records": int(doc["records"]),
                            "at": at,
                        }
                    )
                elif m := CYCLE.match(message):
                    self.cycles.append({"cycle": int(m.group(1)), "records": int(m.group(3)), "at": at})
                elif m := JOB.match(message):
                    self.jobs.append({"cycle": int(m.group(1)), "seconds": float(m.group(2)), "at": at})
        self.sink.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def metrics(self) -> dict[str, float]:
        """The backup's cycle metrics: sum and count of ``cycle_duration_seconds``."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as answer:
                text = answer.read().decode()
        except OSError:
            return {}
        out = {}
        for line in text.splitlines():
            if line.startswith("kafka_s3_backup_cycle_duration_seconds_sum"):
                out["sum"] = float(line.rsplit(" ", 1)[1])
            elif line.startswith("kafka_s3_backup_cycle_duration_seconds_count"):
                out["count"] = float(line.rsplit(" ", 1)[1])
        return out

    def stop(self) -> None:
        kill_group(self.proc.pid)
        self.proc.wait()
        self.reader.join(10)
        self.sink.close()


def tree_cpu(root: int) -> dict[str, float]:
    """CPU-seconds (user + system) so far of every live process of ``root``'s tree, by kind (driver, JVM, Python
    daemon and workers)."""
    out: dict[str, float] = {}
    tree = process_tree(root)
    for pid in tree:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        kind = process_kind(pid, root, tree)
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------------- the producer
class SteadyProducer:
    """``rate`` records/s round robin over ``partitions``, paced every :data:`TICK_S`; keeps each record's timestamp
    (ms, set at ``produce()``) per partition in produce order, which is offset order in a fresh topic."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, value_size: int, rate: int):
        from confluent_kafka import Producer

        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1_048_576,
            }
        )
        rng = np.random.default_rng(value_size)
        self.values = [bytes(rng.integers(32, 127, value_size, dtype=np.uint8)) for _ in range(256)]
        self.timestamps: list[list[int]] = [[] for _ in range(partitions)]
        self.produced = 0
        self.errors: list[str] = []
        self.windows: list[tuple[float, float, int]] = []  # (start, end, records) of each produce() call of run()

    def _delivered(self, err, _msg) -> None:
        if err is not None and len(self.errors) < 5:
            self.errors.append(str(err))

    def run(self, seconds: float) -> tuple[float, int]:
        """Produce for ``seconds`` at the rate; returns (seconds it took, records)."""
        produce, poll = self.producer.produce, self.producer.poll
        started = time.time()
        first = self.produced
        n = self.produced
        tick = 0
        while True:
            now = time.time()
            if now - started >= seconds:
                break
            due = first + int((now - started) * self.rate)
            while n < due:
                partition = n % self.partitions
                ms = int(time.time() * 1000)
                value = self.values[n % len(self.values)]
                try:
                    produce(self.topic, value, partition=partition, timestamp=ms, on_delivery=self._delivered)
                except BufferError:
                    poll(0.05)
                    continue
                self.timestamps[partition].append(ms)
                n += 1
            poll(0)
            tick += 1
            time.sleep(max(0.0, started + tick * TICK_S - time.time()))
        self.produced = n
        ended = time.time()
        self.windows.append((started, ended, n - first))
        return ended - started, n - first

    def flush(self) -> None:
        remaining = self.producer.flush(120)
        if remaining or self.errors:
            raise RuntimeError(f"produce to {self.topic} failed: {remaining} undelivered, errors: {self.errors}")


# ---------------------------------------------------------------------------------------------------- measuring
def measure(args: argparse.Namespace, services: Services, work: Path, run_id: str) -> dict:
    name = f"bench-follow-{run_id}"
    interval_s = args.rotate_interval_ms / 1000
    props = product.backup_properties(
        name,
        name,
        name,
        "bytearray",
        1_000_000_000,
        {
            **FORMAT_PROPERTIES[args.format],
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "partition.duration.ms": "3600000",
            "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
            "locale": "en-US",
            "timezone": "UTC",
            "timestamp.extractor": "Record",
            "rotate.interval.ms": str(args.rotate_interval_ms),
            **({"cycle.interval.ms": str(args.cycle_interval_ms)} if args.cycle_interval_ms is not None else {}),
        },
    )
    config = product.write_properties(work / "follow.properties", props)
    out: dict = {
        "format": args.format,
        "partitions": args.partitions,
        "rate": args.rate,
        "value_size": args.value_size,
        "minutes": args.minutes,
        "rotate_interval_ms": args.rotate_interval_ms,
        "cycle_interval_ms": args.cycle_interval_ms,
        "target_s": interval_s + TARGET_MARGIN_S,
        "load_start": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    create_topic(services, name, args.partitions)
    create_bucket(services, name)
    follower = Follower(config, services, work / "follow-backup.log", free_port())
    try:
        producer = SteadyProducer(services.bootstrap, name, args.partitions, args.value_size, args.rate)
        # Warm-up: a record per partition and second until the backup's first Spark job has ended (Spark's start is
        # not follow mode's latency, nor is a backlog of the full rate piled up while it starts)
        warm_up = time.monotonic()
        rate, producer.rate = producer.rate, args.partitions
        while not follower.jobs:
            producer.run(1.0)
            if time.monotonic() - warm_up > args.start_timeout or not follower.alive():
                raise RuntimeError(
                    f"the backup ran no Spark job within {args.start_timeout:.0f} s ({follower.log_path})"
                )
        out["first_job_s"] = time.monotonic() - warm_up
        producer.rate = rate
        print(f"backup following {name} (first job ended after {out['first_job_s']:.0f} s); producing", flush=True)
        window_start = {p: len(ts) for p, ts in enumerate(producer.timestamps)}  # measured: from here...
        seconds, records = producer.run(args.minutes * 60)
        window_end = {p: len(ts) for p, ts in enumerate(producer.timestamps)}  # ...to here
        out["produced"] = {"records": records, "seconds": seconds, "records_per_s": records / seconds}
        print(f"produced {records:,} records in {seconds:.1f} s ({records / seconds:,.0f} rec/s); tail", flush=True)
        # The window's last records close only when a later record comes: produce on for an interval and a margin
        producer.run(interval_s + 2.0)
        producer.flush()
        ends = end_offsets(services, name, args.partitions)
        if ends != {p: len(ts) for p, ts in enumerate(producer.timestamps)}:
            raise RuntimeError("the topic's end offsets are not the records produced: offsets cannot be ranks")
        out["durable_wait_s"], caught_up = wait_durable(follower, window_end, args.drain_timeout)
        if caught_up:  # the summary line of the cycle that committed the last objects comes after them
            wait_cycle_end(follower, args.drain_timeout)
        out["latency"] = latencies(follower, producer, window_start, window_end)
        out["load_after_latency"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        if args.idle_cycles > 0 and caught_up:
            out["idle"] = idle_cycles(follower, args.idle_cycles, (args.cycle_interval_ms or 10_000) / 1000)
        elif args.idle_cycles > 0:
            out["idle"] = {"skipped": f"the backup had not caught up {args.drain_timeout:.0f} s after production"}
        out["load_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    finally:
        follower.stop()
        if not args.keep:
            delete_topics(services, [name])
            remove_bucket(services, name)
    return out


def wait_durable(follower: Follower, window_end: dict[int, int], timeout: float) -> tuple[float, bool]:
    """Seconds until every record of the window is in a committed object (or ``timeout``), and whether they are."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with follower.lock:
            reached: dict[int, int] = {}
            for o in follower.objects:
                reached[o["partition"]] = max(reached.get(o["partition"], 0), o["last"] + 1)
        if all(reached.get(p, 0) >= end for p, end in window_end.items()):
            return time.monotonic() - started, True
        if not follower.alive():
            break
        time.sleep(0.5)
    return time.monotonic() - started, False


def wait_cycle_end(follower: Follower, timeout: float) -> None:
    """Until a cycle's summary line follows the last object's line (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and follower.alive():
        with follower.lock:
            last_object = max((o["at"] for o in follower.objects), default=0.0)
            if any(c["at"] >= last_object for c in follower.cycles):
                return
        time.sleep(0.2)


def latencies(
    follower: Follower, producer: SteadyProducer, window_start: dict[int, int], window_end: dict[int, int]
) -> dict:
    """Per record of the window: the object's durable time and its cycle's commit time, minus its produce time."""
    with follower.lock:
        objects, cycles = list(follower.objects), list(follower.cycles)
    cycle_ends = np.array(sorted(c["at"] for c in cycles))
    durable: list[np.ndarray] = []
    committed: list[np.ndarray] = []
    measured = 0
    stamps = [np.asarray(ts, dtype=np.float64) / 1000 for ts in producer.timestamps]
    for o in objects:
        p = o["partition"]
        first, last = max(o["first"], window_start[p]), min(o["last"], window_end[p] - 1)
        if last < first:
            continue
        produced = stamps[p][first : last + 1]
        measured += len(produced)
        durable.append(o["at"] - produced)
        after = int(np.searchsorted(cycle_ends, o["at"]))  # the cycle whose summary follows the object's line
        if after < len(cycle_ends):
            committed.append(cycle_ends[after] - produced)
    expected = sum(window_end[p] - window_start[p] for p in window_end)
    return {
        "records": expected,
        "measured": measured,
        "objects": len(objects),
        "durable": summary(durable, expected),
        "cycle_commit": summary(committed, expected),
        "cycles": len(cycles),
        "jobs_s": [j["seconds"] for j in follower.jobs],
    }


def summary(pieces: list[np.ndarray], records: int) -> dict:
    """Percentiles over ``records`` records, of which those not in ``pieces`` (not durable when the wait ended) count
    as longer than any measured: a percentile falling among them is None ("not durable")."""
    values = np.concatenate(pieces) if pieces else np.array([])
    if not records:
        return {}
    values = np.concatenate([values, np.full(max(0, records - len(values)), np.inf)])
    quantiles = np.percentile(values, [50, 90, 99, 100], method="higher")
    p50, p90, p99, top = (float(q) if np.isfinite(q) else None for q in quantiles)
    return {"p50": p50, "p90": p90, "p99": p99, "max": top, "not_durable": int(np.isinf(values).sum())}


def idle_cycles(follower: Follower, cycles: int, interval_s: float) -> dict:
    """``cycles`` cycles with nothing new: mean wall (the metric) and the tree's CPU-seconds per cycle, by kind. The
    metrics endpoint is asked rarely inside the window (every request costs the driver CPU)."""
    start = follower.metrics()
    # Two cycles on (the one committing the last objects ends, the next reads what the tail left), from a cycle's
    # end, so that the window holds whole idle cycles
    while follower.metrics().get("count", 0) < start.get("count", 0) + 2:
        if not follower.alive():
            raise RuntimeError("the backup ended before its idle cycles")
        time.sleep(0.05)
    before_metrics = follower.metrics()
    before_cpu = tree_cpu(follower.proc.pid)
    jobs_before = len(follower.jobs)
    began = time.monotonic()
    time.sleep(max(0.0, (cycles - 0.5) * interval_s))
    while follower.metrics().get("count", 0) < before_metrics["count"] + cycles:
        if not follower.alive():
            raise RuntimeError("the backup ended during the idle cycles")
        time.sleep(0.25)
    elapsed = time.monotonic() - began
    after_cpu = tree_cpu(follower.proc.pid)
    after_metrics = follower.metrics()
    counted = after_metrics["count"] - before_metrics["count"]
    cpu = {k: (after_cpu[k] - before_cpu.get(k, 0.0)) / counted for k in after_cpu}
    return {
        "cycles": int(counted),
        "elapsed_s": elapsed,
        "wall_s": (after_metrics["sum"] - before_metrics["sum"]) / counted,
        "cpu_s": sum(cpu.values()),
        "cpu_s_by_kind": cpu,
        "spark_jobs": len(follower.jobs) - jobs_before,
    }


# ---------------------------------------------------------------------------------------------------- report
def held(value: float | None, bound: float) -> str:
    """Whether a measured value is within its bound (None: not measured, or not durable within the wait)."""
    return "**no**" if value is None or value > bound else "yes"


def _seconds(value: float | None) -> str:
    return "not durable" if value is None else f"{value:.1f}"


def render(results: dict) -> str:
    cycle = results.get("cycle_interval_ms")
    lines = [
        f"# Follow mode ({results.get('stamp', '')})",
        "",
        f"A following `kafka-s3 backup` ({results['format']}, TimeBasedPartitioner hourly with the Record extractor, "
        f"`rotate.interval.ms={results['rotate_interval_ms']}`, `cycle.interval.ms="
        f"{'default' if cycle is None else cycle}`, `flush.size` never reached) while {results['rate']:,} rec/s of "
        f"{results['value_size']} B values are produced over {results['partitions']} partitions for "
        f"{results['minutes']:g} min; broker: {results.get('services', {}).get('kafka', 'n/a')}; load average "
        f"{results.get('load_start', '?')} at the start, {results.get('load_end', '?')} at the end.",
        "",
    ]
    if results.get("error"):
        return "\n".join([*lines, f"Failed: {results['error']}", ""])
    produced = results.get("produced") or {}
    latency = results.get("latency") or {}
    if produced:
        kept = produced["records_per_s"] / results["rate"]
        lines += [
            f"Producer: {produced['records']:,} records in {produced['seconds']:.1f} s = "
            f"{produced['records_per_s']:,.0f} rec/s ({kept:.2f}× the rate asked), measured from the end of the "
            f"backup's first Spark job ({results.get('first_job_s', 0):.0f} s of warm-up records before, one a "
            "partition and second, not measured: Spark's start). Every record of the window was durable "
            f"{results.get('durable_wait_s', 0):.0f} s after the window's last one was produced (production went on "
            f"one rotation interval + 2 s); {latency.get('cycles', 0)} cycles, {latency.get('objects', 0):,} objects.",
            "",
        ]
    target = results["target_s"]
    if latency:
        lines += [
            f"Produce → durable, per record ({latency.get('measured', 0):,} of {latency.get('records', 0):,} "
            f"records measured; target p99 ≤ rotate interval + 3 s = {target:g} s):",
            "",
            "| until | p50 s | p90 s | p99 s | max s | not durable | p99 ≤ target |",
            "|---|--:|--:|--:|--:|--:|---|",
        ]
        for key, label in (
            ("durable", "the object is stored (its `committed` line)"),
            ("cycle_commit", "its cycle committed (group offsets)"),
        ):
            s = latency.get(key) or {}
            if s:
                cells = " | ".join(_seconds(s[q]) for q in ("p50", "p90", "p99", "max"))
                lines.append(f"| {label} | {cells} | {s['not_durable']:,} | {held(s['p99'], target)} |")
        jobs = latency.get("jobs_s") or []
        if jobs:
            lines += [
                "",
                f"Spark jobs during the run: {len(jobs)}, median {float(np.median(jobs)):.1f} s, "
                f"max {max(jobs):.1f} s.",
            ]
        lines.append("")
    idle = results.get("idle")
    if idle and idle.get("skipped"):
        lines += [f"Idle cycle: not measured ({idle['skipped']}).", ""]
    elif idle:
        by_kind = ", ".join(f"{k} {v:.3f}" for k, v in idle["cpu_s_by_kind"].items() if v)
        lines += [
            f"Idle cycle (nothing new; {idle['cycles']} cycles over {idle['elapsed_s']:.0f} s, "
            f"{idle['spark_jobs']} Spark jobs started):",
            "",
            "| per cycle | measured | target | held |",
            "|---|--:|--:|---|",
            f"| wall s (cycle_duration_seconds) | {idle['wall_s']:.3f} | < {IDLE_WALL_TARGET_S} | "
            f"{held(idle['wall_s'], IDLE_WALL_TARGET_S)} |",
            f"| CPU-s, whole process tree ({by_kind}) | {idle['cpu_s']:.3f} | < {IDLE_CPU_TARGET_S} | "
            f"{held(idle['cpu_s'], IDLE_CPU_TARGET_S)} |",
            "",
            f"The tree's CPU-s include what the JVM and the idle Python workers spend between cycles: "
            f"{idle['cpu_s'] * idle['cycles'] / idle['elapsed_s']:.3f} CPU-s per second of following.",
            "",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
