"""The memory levers of issue 30 (target 3: < 1 GiB for the whole process tree with 1,000 open field partitions), one
by one, on one topic produced once.

Each variant runs the bench's memory case (``run.py``'s ``_memory_case``: ``kafka-s3 backup --once`` of the topic
with the Field partitioner on ``customer``, 1,000 objects open per partition, ``s3.part.size=5242880``) and, with
``--rate-records``, a plain ByteArray backup of a topic of that many records (the rate a default change must keep).
The variants alternate round by round, so each sees the same load. Every run's peak RSS of the whole process tree is
split per process kind (driver, JVM, Spark's Python daemon, Python workers: ``common.TreeSampler``).

    .venv/bin/python bench/memory.py --variants defaults,bounded --rounds 2 --rate-records 200000

A variant is a name below (``VARIANTS``): sink properties (``spark.*`` keys reach the session), environment
variables of the command, and ``--master``. Prints one line per run and a Markdown table of the medians; writes
every run to ``--json-out``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import product
from common import (
    MiB,
    Services,
    create_bucket,
    create_topic,
    delete_topics,
    remove_bucket,
    services_up,
    stop_own_kafka,
)
from dataset import Dataset, produce

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("driver", "jvm", "python daemon", "python workers")


@dataclass(frozen=True)
class Variant:
    """What a lever changes: sink properties, the command's environment, the Spark master."""

    properties: dict[str, str] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict)
    master: str | None = None


BOUNDED = {"upload.buffer.memory.total.bytes": "16777216", "consumer.override.queued.max.messages.kbytes": "8192"}


def _java_options(extra: str) -> str:
    """The session's driver JVM options (kafka_s3.spark.session) plus ``extra``: a spark.* key of the sink file
    replaces the session's value whole."""
    from kafka_s3.spark.session import FAST_START_JVM_FLAGS, _log4j_config

    return f"-Dlog4j2.configurationFile=file:{_log4j_config()} {FAST_START_JVM_FLAGS} {extra}".strip()


VARIANTS: dict[str, Variant] = {
    "defaults": Variant(),
    # the daemon and workers importing pyspark from Spark's pyspark.zip (the default before kafka_s3.spark.daemon)
    "zip-daemon": Variant(properties={"spark.python.daemon.module": "pyspark.daemon"}),
    # bench/run.py's --memory-settings: the upload budget 64 → 16 MiB and librdkafka's prefetch queue 16 → 8 MiB
    "bounded": Variant(properties=BOUNDED),
    "budget-32": Variant(properties={"upload.buffer.memory.total.bytes": str(32 * MiB)}),
    "budget-16": Variant(properties={"upload.buffer.memory.total.bytes": str(16 * MiB)}),
    "queue-8": Variant(properties={"consumer.override.queued.max.messages.kbytes": "8192"}),
    # one Python worker instead of local[*]'s two
    "one-worker": Variant(master="local[1]"),
    # the JVM's heap given back after each collection, and its young generation bounded
    "jvm-shrink": Variant(
        properties={"spark.driver.extraJavaOptions": _java_options("-XX:MaxHeapFreeRatio=20 -XX:MinHeapFreeRatio=5")}
    ),
    "jvm-young-16m": Variant(properties={"spark.driver.extraJavaOptions": _java_options("-Xmn16m")}),
    "arena-2": Variant(environ={"MALLOC_ARENA_MAX": "2"}),
}


def run_variant(name: str, variant: Variant, services: Services, topic: Dataset, work: Path, tag: str) -> dict:
    """One memory case of ``variant`` on ``topic`` (the Field partitioner's 1,000 open objects per partition)."""
    bucket = f"kafka-s3-mem-{tag}-{uuid.uuid4().hex[:6]}"
    create_bucket(services, bucket)
    try:
        props = product.backup_properties(
            bucket,
            topic.topic,
            bucket,
            "json-gzip",
            topic.records + 1,
            {
                "s3.compression.type": "none",
                "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
                "partition.field.name": "customer",
                "s3.part.size": "5242880",
                **variant.properties,
            },
        )
        return _run(name, "memory case", props, variant, services, work, topic, bucket)
    finally:
        remove_bucket(services, bucket)


def run_rate(name: str, variant: Variant, services: Services, topic: Dataset, work: Path, tag: str) -> dict:
    """A plain ByteArray backup of ``topic`` with ``variant``: the rate a default change must keep."""
    bucket = f"kafka-s3-mem-{tag}-{uuid.uuid4().hex[:6]}"
    create_bucket(services, bucket)
    try:
        props = product.backup_properties(bucket, topic.topic, bucket, "bytearray", 50_000, variant.properties)
        return _run(name, "rate case", props, variant, services, work, topic, bucket)
    finally:
        remove_bucket(services, bucket)


def _run(
    name: str,
    case: str,
    props: dict[str, str],
    variant: Variant,
    services: Services,
    work: Path,
    topic: Dataset,
    bucket: str,
) -> dict:
    config = product.write_properties(work / f"{bucket}.properties", props)
    saved = {key: os.environ.get(key) for key in variant.environ}
    os.environ.update(variant.environ)  # Services.environ() copies os.environ for the command
    try:
        run = product.run_cli("backup", config, services, work / f"{bucket}.log", 1500, variant.master)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    run.update({"variant": name, "case": case, "load": round(os.getloadavg()[0], 1)})
    if run.get("records") != topic.records:
        run["incomplete"] = f"{run.get('records')} records instead of {topic.records}"
    return run


def wait_for_topic(services: Services, ds: Dataset, timeout: float = 60.0) -> None:
    """Until the broker's metadata holds every partition of a new topic (a loaded broker answers produce requests
    with UNKNOWN_TOPIC_OR_PART for a while after the creation returned)."""
    from common import admin

    client = admin(services)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topic = client.list_topics(ds.topic, timeout=10).topics.get(ds.topic)
        if topic is not None and topic.error is None and len(topic.partitions) == ds.partitions:
            return
        time.sleep(0.5)
    raise RuntimeError(f"topic {ds.topic} has no metadata after {timeout:.0f} s")


def line(run: dict) -> str:
    parts = ", ".join(f"{k} {v / MiB:,.0f}" for k, v in sorted(run.get("peak_rss_breakdown", {}).items()))
    problem = run.get("incomplete") or (str(run.get("error", "")).splitlines() or [""])[-1]
    return (
        f"{run['variant']:>12} {run['case']}: peak {run['peak_rss'] / MiB:,.0f} MiB ({parts}), "
        f"job {run.get('job_s', 0):.1f} s, wall {run['wall_s']:.1f} s, load {run['load']}"
        + (f" — {problem}" if problem else "")
    )


def medians(runs: list[dict]) -> str:
    """Markdown: per variant and case, the medians of the peak, of each process kind and of the job's time."""
    rows = [
        "| variant | case | runs | peak RSS MiB | driver | JVM | Python daemon | Python workers | job s | load |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["variant"], run["case"]), []).append(run)
    for (variant, case), group in groups.items():
        kinds = [statistics.median(r.get("peak_rss_breakdown", {}).get(k, 0) for r in group) / MiB for k in KINDS]
        rows.append(
            f"| {variant} | {case} | {len(group)} | {statistics.median(r['peak_rss'] for r in group) / MiB:,.0f} | "
            + " | ".join(f"{k:,.0f}" for k in kinds)
            + f" | {statistics.median(r.get('job_s', 0) for r in group):.1f} | "
            f"{statistics.median(r['load'] for r in group):.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="defaults,bounded", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--records", type=int, default=1_000_000, help="memory case records (default 1,000,000)")
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rate-records", type=int, default=0, help="also a ByteArray backup of this many (0: none)")
    parser.add_argument("--rate-variants", help="the variants the rate case runs for (default: all of --variants)")
    parser.add_argument("--no-memory-case", action="store_true", help="only the rate case")
    parser.add_argument("--kafka", choices=["apache", "noida"], default="apache")
    parser.add_argument("--own-kafka-port", type=int, help="port of a broker of the script's own (default 21292)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}: {', '.join(VARIANTS)}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = RESULTS / f"{stamp}-memory.tmp"
    work.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:6]
    runs: list[dict] = []
    topics: list[str] = []
    try:
        services = services_up(args.kafka, work, own_port=args.own_kafka_port)
        print(f"services: {services.describe()}; logs in {work}", flush=True)
        cases: list[tuple[str, Dataset]] = []
        for case, records in (("memory", 0 if args.no_memory_case else args.records), ("rate", args.rate_records)):
            if records:
                ds = Dataset(f"kafka-s3-mem-{run_id}-{case}", records, args.value_size, args.partitions)
                create_topic(services, ds.topic, ds.partitions)
                topics.append(ds.topic)
                wait_for_topic(services, ds)
                rate = produce(services.bootstrap, ds)["records_per_s"]
                print(f"{case} topic {ds.label} produced at {rate:,.0f} rec/s", flush=True)
                cases.append((case, ds))
        for round_number in range(args.rounds):
            for name in names:
                for case, ds in cases:
                    if case == "rate" and args.rate_variants and name not in args.rate_variants.split(","):
                        continue
                    measure = run_variant if case == "memory" else run_rate
                    run = measure(name, VARIANTS[name], services, ds, work, f"{round_number}-{case}")
                    run["round"] = round_number
                    runs.append(run)
                    print(line(run), flush=True)
        if topics:
            delete_topics(services, topics)
    finally:
        stop_own_kafka(work)
    print("\n" + medians(runs))
    if args.json_out:
        args.json_out.write_text(json.dumps({"stamp": stamp, "args": vars(args), "runs": runs}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
