"""kafka-s3 runs: configuration files per format, ``kafka-s3 backup --once`` / ``kafka-s3 restore`` as CLI
subprocesses (own process group, whole-tree RSS sampled), and the split of their wall time read from the INFO log.

Log lines used (stderr of the CLI):

- ``spark session ready in X s``             (backup.py / restore.py ``spark`` property)
- ``cycle N: spark job ran in X s``          (backup.py ``run_cycle``)
- ``cycle N: P partitions, R records, O objects (K already stored), M MB in X s``
- ``restore job: N records in X s``          (restore.py ``_run_job``)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from common import ProcessRun, Services, run_measured

# name -> (label, sink properties). Values are JSON objects; ByteArray/Avro/Parquet keep them as bytes
# (ByteArrayConverter), JSON parses them (JsonConverter, schemaless) as Confluent's JSON format does.
FORMATS: dict[str, tuple[str, dict[str, str]]] = {
    "bytearray": ("ByteArray", {"format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"}),
    "json-gzip": (
        "JSON+gzip",
        {
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "s3.compression.type": "gzip",
        },
    ),
    "avro-deflate": (
        "Avro+deflate",
        {
            "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
            "avro.codec": "deflate",
        },
    ),
    "parquet-snappy": (
        "Parquet+snappy",
        {
            "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
            "parquet.codec": "snappy",
        },
    ),
    "envelope-avro": (
        "Envelope (Avro+deflate)",
        {
            "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
            "avro.codec": "deflate",
            "store.envelope": "true",
        },
    ),
    "envelope-parquet": (
        "Envelope (Parquet+snappy)",
        {
            "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
            "parquet.codec": "snappy",
            "store.envelope": "true",
        },
    ),
    "envelope-json": (
        "Envelope (JSON+gzip)",
        {
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "s3.compression.type": "gzip",
            "store.envelope": "true",
        },
    ),
}
RESTORE_MODES = {"eos": "required", "alo": "disabled"}

SESSION = re.compile(r"spark session ready in ([\d.]+)s")
BACKUP_JOB = re.compile(r"cycle (\d+): spark job ran in ([\d.]+)s")
CYCLE = re.compile(
    r"cycle (\d+): (\d+) partitions, (\d+) records, (\d+) objects \((\d+) already stored\), "
    r"([\d.]+) MB in ([\d.]+)s"
)
RESTORE_JOB = re.compile(r"restore job: (\d+) records in ([\d.]+)s")


@dataclass
class Timing:
    """What the log says about one CLI run."""

    spark_start: float | None = None
    job_seconds: float = 0.0
    jobs: int = 0
    records: int = 0
    objects: int = 0
    megabytes: float = 0.0


def parse_log(text: str, kind: str) -> Timing:
    timing = Timing()
    if m := SESSION.search(text):
        timing.spark_start = float(m.group(1))
    if kind == "backup":
        for m in BACKUP_JOB.finditer(text):
            timing.jobs += 1
            timing.job_seconds += float(m.group(2))
        for m in CYCLE.finditer(text):
            timing.records += int(m.group(3))
            timing.objects += int(m.group(4))
            timing.megabytes += float(m.group(6))
    else:
        for m in RESTORE_JOB.finditer(text):
            timing.jobs += 1
            timing.records += int(m.group(1))
            timing.job_seconds += float(m.group(2))
    return timing


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def backup_properties(
    name: str, topic: str, bucket: str, fmt: str, flush_size: int, extra: dict | None = None
) -> dict[str, str]:
    return {
        "name": name,
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic,
        "s3.bucket.name": bucket,
        "flush.size": str(flush_size),
        **FORMATS[fmt][1],
        **(extra or {}),
    }


def restore_properties(name: str, topic: str, target: str, bucket: str, fmt: str, mode: str) -> dict[str, str]:
    props = {
        "name": name,
        "connector.class": "io.confluent.connect.s3.source.S3SourceConnector",
        "s3.bucket.name": bucket,
        "topics": topic,
        "topic.rename": f"{topic}:{target}",
        "topic.creation.enable": "true",
        "exactly.once.support": RESTORE_MODES[mode],
        "topic.creation.default.retention.ms": "-1",
    }
    props.update(dict(FORMATS[fmt][1].items()))
    return props


def cli(args: list[str], services: Services, log: Path, timeout: float) -> ProcessRun:
    return run_measured([sys.executable, "-m", "kafka_s3.cli", *args], services.environ(), log, timeout)


def run_cli(
    kind: str,
    config: Path,
    services: Services,
    log: Path,
    timeout: float,
    master: str | None = None,
    remote: str | None = None,
) -> dict:
    """One ``kafka-s3 backup --once`` or ``kafka-s3 restore`` (on ``--master`` or ``--remote`` when given, else the
    CLI's in-process ``local[*]``); returns the measurements."""
    args = (
        ["backup", "-c", str(config), "--once", "--no-progress"] if kind == "backup" else ["restore", "-c", str(config)]
    )
    if master:
        args += ["--master", master]
    if remote:
        args += ["--remote", remote]
    run = cli(args, services, log, timeout)
    text = log.read_text(errors="replace")
    timing = parse_log(text, kind)
    result = {
        "kind": kind,
        "master": master or "local[*]",
        "config": str(config),
        "log": str(log),
        "returncode": run.returncode,
        "timed_out": run.timed_out,
        "wall_s": run.wall,
        "spark_start_s": timing.spark_start,
        "job_s": timing.job_seconds,
        "jobs": timing.jobs,
        "records": timing.records,
        "objects": timing.objects,
        "stored_mb": timing.megabytes,
        "peak_rss": run.peak_rss,
        "peak_pss": run.peak_pss,
        "peak_rss_breakdown": run.peak_breakdown,
        "peak_processes": run.peak_processes,
    }
    if run.returncode != 0:
        result["error"] = run.tail()
    return result
