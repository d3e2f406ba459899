"""``kafka-s3 verify``: is the backup in the bucket whole? The restore's own checks, without a restore.

The listing and the chunk manifests give coverage, overlaps, sizes and sidecar counts (:mod:`.read.integrity`).
``deep`` also decodes every object in Spark tasks, one per source partition: each must decode, its record count
must match its manifest, and stored offsets must increase. Works on another tool's bucket as far as names tell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import FormatError
from kafka_s3.core.layouts.detection import Detection
from kafka_s3.io.kafka.clients import TP
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.engine import Engine, Task
from kafka_s3.pipelines.read.committed import cross_check, read_marks
from kafka_s3.pipelines.read.discovery import BackupObject
from kafka_s3.pipelines.read.integrity import Finding, Kind, PartitionCheck, survey, without_excluded
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.task_settings import TaskSettings


@dataclass
class VerifyReport:
    checks: dict[TP, PartitionCheck] = field(default_factory=dict)
    deep: bool = False
    layout: str = ""  # whose layout the prefix holds (read/layouts.py)
    empty: list[str] = field(default_factory=list)  # topics asked for of which the bucket holds nothing
    notes: list[str] = field(default_factory=list)  # what was not checked, and why

    @property
    def problems(self) -> list[Finding]:
        return [f for check in self.checks.values() for f in check.blocking]

    @property
    def whole(self) -> bool:
        """No problem, and something backed up: what exit code 0 means."""
        return not self.problems and not self.empty and bool(self.checks)

    @property
    def verdict(self) -> str:
        """The report's last line: what was found, and what could not be checked."""
        if self.problems:
            return f"{len(self.problems)} problem{'' if len(self.problems) == 1 else 's'}"
        if self.empty or not self.checks:
            what = ", ".join(self.empty) if self.empty else "any topic"
            return f"nothing backed up: no object and no manifest of {what} in the bucket"
        said = []
        unverified = [c for c in self.checks.values() if not c.verified]
        if unverified:
            said.append(
                f"{len(unverified)} partition(s) hold objects without kafka-s3 manifests (another tool's): their names "
                "and order were checked, but a missing newest object, or a missing object between two others, cannot "
                "be told without manifests"
            )
        unfinished = [c.unfinished for c in self.checks.values() if c.unfinished is not None]
        if unfinished:
            said.append(f"{len(unfinished)} partition(s) have chunks a running backup has not finished uploading")
        if not said:
            return "the backup is whole"
        return "no problem found; " + "; ".join(said)

    def to_dict(self) -> dict[str, object]:
        return {
            "deep": self.deep,
            "layout": self.layout,
            "clean": self.whole,
            "verdict": self.verdict,
            "notes": self.notes,
            "partitions": [check.to_dict() for check in self.checks.values()],
        }


def check_store(
    config: Config, topics: list[str] | None = None, notes: list[str] | None = None
) -> tuple[dict[TP, PartitionCheck], dict[TP, list[BackupObject]]]:
    """The listing-and-manifest checks of every source partition, and the objects each partition would restore; with
    the backup's consumer group compared with the bucket where the cluster has it (``notes`` receives why not).
    ``config`` holds the layout already (:func:`detected_config`)."""
    store = StoreSpec.from_config(config).open()
    store.check()
    plugins = ReadPlugins.from_config(config)
    asked = topics or config["topics"] or None
    marks, note = read_marks(config, store.url, asked or plugins.manifests(store).topics())
    if note and notes is not None:
        notes.append(f"the backup's consumer group was not compared with the bucket: {note}")
    found = survey(store, plugins, asked)
    cross_check(found.checks, found.manifests, marks, set(found.sizes))
    objects = {tp: without_excluded(part, found.checks[tp], hold=False) for tp, part in found.partitions.items()}
    return found.checks, objects


def detected_config(config: Config) -> tuple[Config, Detection]:
    """The configuration with the layout its prefix holds (:func:`kafka_s3.pipelines.read.layouts.detected`)."""
    store = StoreSpec.from_config(config).open()
    store.check()
    return detected(config, store)


def verify(config: Config, engine: Engine | None, topics: list[str] | None = None, deep: bool = False) -> VerifyReport:
    config, detection = detected_config(config)
    notes: list[str] = []
    checks, objects = check_store(config, topics, notes)
    asked = topics or config["topics"] or []
    empty = [t for t in asked if not any(tp[0] == t for tp in checks)]
    report = VerifyReport(checks, deep, detection.describe(), empty, notes)
    if deep:
        if engine is None:
            raise ValueError("a deep verify decodes objects in Spark tasks: it needs an engine")
        for tp, findings in deep_check(engine, config, objects).items():
            checks[tp].findings.extend(findings)
    return report


def deep_check(engine: Engine, config: Config, objects: dict[TP, list[BackupObject]]) -> dict[TP, list[Finding]]:
    """Decode every object (one Spark task per source partition) and return what is wrong, per partition."""
    work = [(tp, objs) for tp, objs in sorted(objects.items()) if objs]
    if not work:
        return {}
    settings = TaskSettings(config, StoreSpec.from_config(config))
    rows = engine.run_tasks(f"kafka-s3 verify --deep ({len(work)} partitions)", _deep_task(work, settings), len(work))
    out: dict[TP, list[Finding]] = {}
    for row in rows:
        doc = json.loads(row)
        tp = (doc["topic"], doc["partition"])
        out[tp] = [
            Finding(Kind(f["kind"]), tp[0], tp[1], f["first"], f["last"], tuple(f["keys"]), f["message"])
            for f in doc["findings"]
        ]
    return out


def _deep_task(work: list[tuple[TP, list[BackupObject]]], settings: TaskSettings) -> Task:
    def task(slot: int) -> Iterator[str]:
        tp, objs = work[slot]
        findings = decode_partition(tp, objs, settings)
        yield json.dumps({"topic": tp[0], "partition": tp[1], "findings": [f.to_dict() for f in findings]})

    return task


def decode_partition(tp: TP, objects: list[BackupObject], settings: TaskSettings) -> list[Finding]:
    """Runs in a task: every object decodes, holds the records its manifest says, and stored offsets increase."""
    from kafka_s3.pipelines.read.objects import read_object

    plugins = settings.plugins("read-plugins", ReadPlugins.from_config)
    store = settings.open_store()
    findings: list[Finding] = []
    previous = -1
    for obj in objects:
        records = 0
        try:
            for batch in read_object(store, plugins, obj):
                records += batch.num_rows
                if plugins.envelope:
                    offsets = batch.column("offset").to_numpy()
                    if len(offsets) and (offsets[0] <= previous or (offsets[1:] <= offsets[:-1]).any()):
                        raise FormatError(f"stored offsets do not increase (at or after offset {previous + 1})")
                    if len(offsets):
                        previous = int(offsets[-1])
        except FormatError as exc:
            findings.append(Finding(Kind.UNDECODABLE, tp[0], tp[1], obj.start, None, (obj.key,), f"{exc}"))
            continue
        if obj.records is not None and records != obj.records:
            findings.append(
                Finding(
                    Kind.COUNTS,
                    tp[0],
                    tp[1],
                    obj.start,
                    None,
                    (obj.key,),
                    f"decodes to {records} records, its manifest recorded {obj.records}",
                )
            )
    return findings
