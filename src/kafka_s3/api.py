"""kafka-s3's Python API: every command of the CLI as a function a notebook, an Airflow task or a test can call.

A configuration is a ``.properties`` or Kafka Connect REST JSON file (a path), a mapping of properties, or a parsed
:class:`~kafka_s3.core.config.model.Config`. Functions return typed results and raise the project's errors
(:class:`~kafka_s3.core.errors.KafkaS3Error` and its kinds, each with the ``exit_code`` the CLI exits with). Jobs run
on a Spark session built on first use (``master``/``remote``, as the CLI's ``--master``/``--remote``) or on one
given (``spark``). The CLI parses arguments, calls these functions and renders what they return.

Over 450 lines: one short function per command and its result type, kept in one module so the API reads as one page.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kafka_s3.core.catalogue import BackupDetails, BackupEntry
from kafka_s3.core.config.model import Config, ConfigDef
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.groups import SERIES as GROUPS
from kafka_s3.pipelines.backup.cycle import BackupSummary, CycleReport
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.backup.group import BackupGroup
from kafka_s3.pipelines.backup.iceberg.driver import TableBackups, TablesSummary
from kafka_s3.pipelines.backup.result import PartitionResult
from kafka_s3.pipelines.compact import CompactReport
from kafka_s3.pipelines.prune import PruneReport
from kafka_s3.pipelines.read.discovery import Problem
from kafka_s3.pipelines.read.integrity import Finding
from kafka_s3.pipelines.read.options import Bounds, RestoreOptions, Start, parse_offsets, parse_start, parse_time
from kafka_s3.pipelines.restore.driver import Restore, RestorePlanSet, RestoreSummary
from kafka_s3.pipelines.restore.groups import GroupsPlan
from kafka_s3.pipelines.restore.iceberg.driver import TableRestore
from kafka_s3.pipelines.restore.iceberg.plan import FileSpan
from kafka_s3.pipelines.restore.report import estimate_records
from kafka_s3.pipelines.verify import VerifyReport
from kafka_s3.spark.server_state import ServerState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.engine import Engine
    from kafka_s3.spark.engine import SparkEngine

log = logging.getLogger("kafka_s3")

ConfigLike = str | os.PathLike[str] | Mapping[str, Any] | Config
Side = Literal["sink", "source"]
__all__ = [
    "Backup",
    "BackupDetails",
    "BackupEntry",
    "BackupGroup",
    "BackupSummary",
    "Bounds",
    "BucketCreation",
    "CompactReport",
    "ConfigLike",
    "CycleReport",
    "FileSpan",
    "Finding",
    "GroupsPlan",
    "GroupsReport",
    "PartitionResult",
    "Problem",
    "PruneReport",
    "Restore",
    "RestoreDryRun",
    "RestoreOptions",
    "RestorePlanSet",
    "RestoreSummary",
    "ServerStart",
    "ServerState",
    "Start",
    "TableBackups",
    "TableRestore",
    "TablesSummary",
    "Validation",
    "VerifyReport",
    "estimate_records",
    "backup",
    "client_overrides",
    "compact",
    "configurations",
    "create_bucket",
    "groups",
    "info",
    "ls",
    "open_backup",
    "open_restore",
    "parse_start",
    "plan_restore",
    "prune",
    "read",
    "records",
    "restore",
    "restore_options",
    "server_start",
    "server_status",
    "server_stop",
    "status",
    "status_prometheus",
    "validate",
    "verify",
    "versions",
]


# ---------------------------------------------------------------------------------------------------- configurations
def _definition(side: Side) -> ConfigDef:
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE

    return SINK if side == "sink" else SOURCE


def side_of(config: ConfigLike) -> Side:
    """Whose configuration it is by its ``connector.class``: a source connector's (a restore) or a sink's."""
    from kafka_s3.core.config.loader import read_raw

    if isinstance(config, Config):
        raw: Mapping[str, Any] = config.originals
    elif isinstance(config, Mapping):
        raw = config
    else:
        raw = read_raw(os.fspath(config))
    from kafka_s3.core.peers import source_classes

    return "source" if str(raw.get("connector.class", "")) in source_classes() else "sink"


def configurations(
    config: ConfigLike, side: Side | None = None, overrides: Mapping[str, str] | None = None
) -> list[Config]:
    """Every configuration ``config`` holds for ``side`` (default: what its ``connector.class`` says): one per KCQL
    statement of ``connect.s3.kcql``, else one. Warnings (unknown keys, a key set twice) are logged once each."""
    parsed = _parsed(config, side or side_of(config), overrides)
    _log_warnings(parsed)
    return parsed


def _parsed(config: ConfigLike, side: Side, overrides: Mapping[str, str] | None) -> list[Config]:
    from kafka_s3.core import logs
    from kafka_s3.core.config.loader import load_all

    definition = _definition(side)
    if isinstance(config, Config):
        if config.definition is not definition:  # a parsed configuration of the other side: its properties again
            return _parsed(dict(config.originals), side, overrides)
        return [config.replace(**{k.replace(".", "__"): v for k, v in (overrides or {}).items()})]
    if isinstance(config, Mapping):
        return [definition.parse({**{k: str(v) for k, v in config.items()}, **(overrides or {})})]
    return load_all(definition, os.fspath(config), dict(overrides or {}), register_secrets=logs.register_secrets)


def _log_warnings(parsed: Sequence[Config]) -> None:
    """Each warning once, however many statements (or sides) repeat it."""
    said: set[str] = set()
    for one in parsed:
        for warning in one.warnings:
            if warning not in said:
                said.add(warning)
                log.warning("%s", warning)


def _one(config: ConfigLike, side: Side, overrides: Mapping[str, str] | None, topic: str | None = None) -> Config:
    """The one configuration a command works on: of several KCQL statements, the one reading ``topic``."""
    found = configurations(config, side, overrides)
    if len(found) == 1:
        return found[0]
    whose = "configuration" if isinstance(config, Mapping | Config) else "file"
    if topic is None:
        raise ConfigError(f"the {whose} has {len(found)} KCQL statements: choose one (its topic)")
    chosen = [c for c in found if topic in c["topics"]]
    if not chosen:
        raise ConfigError(f"no KCQL statement of the {whose} reads topic {topic!r}")
    return chosen[0]


# ---------------------------------------------------------------------------------------------------- Spark
def spark_engine(
    config: Config,
    app_name: str,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> SparkEngine:
    """The engine a job runs on: ``spark`` when given, else a session built on first use (``master`` or a Spark
    Connect ``remote``, and the configuration's ``spark.*`` keys), so a bad configuration or an unreachable service
    fails before Spark's start-up. Without ``master``, ``remote`` or ``$SPARK_REMOTE`` the jobs run on the user's
    Spark server (none runs: this command runs in-process and starts one when it ends;
    :mod:`kafka_s3.spark.server`, opted out of by ``$KAFKA_S3_SPARK_SERVER=0``)."""
    from kafka_s3.spark.engine import SparkEngine
    from kafka_s3.spark.session import spark_settings

    if spark is not None:
        return SparkEngine(session=spark)
    conf = spark_settings(config.extras)
    from kafka_s3.spark.server import for_command

    server = for_command(master, remote, conf)
    if server is not None:
        from kafka_s3.spark.server_engine import ServerEngine

        return ServerEngine(remote=server, app_name=app_name, conf=conf)
    return SparkEngine(master=master, remote=remote, app_name=app_name, conf=conf)


def check_spark_runtime(
    *, master: str | None = None, remote: str | None = None, spark: SparkSession | None = None
) -> None:
    """Fail now if a command that runs Spark jobs could not start Spark here: a local session needs Java 17 or newer
    (:class:`~kafka_s3.core.errors.JavaUnavailable`, exit 9, saying what was found and what to install); a given
    ``spark`` session or a Spark Connect ``remote`` needs nothing local. Called before Kafka or S3 is touched."""
    if spark is None:
        from kafka_s3.spark.session import require_runtime

        require_runtime(master, remote)


def client_overrides(properties: Mapping[str, str]) -> dict[str, str]:
    """Kafka client properties (kcat's ``-X KEY=VALUE``) as the configuration keys that set them over the file's: a
    connection property (``bootstrap.servers``, ``security.protocol``, ``client.*``, ``sasl.*``, ``ssl.*``) as the
    file sets it, for every client; a key naming its client (``consumer.*``, ``producer.*``, ``admin.*``) as given;
    any other as the connector override ``<client>.override.KEY`` of each client librdkafka applies it to (a consumer
    property to the consumers, a producer property to the producers and admin clients). A property librdkafka does not
    know, or a value it refuses, is a :class:`~kafka_s3.core.errors.ConfigError` naming the key."""
    from kafka_s3.io.kafka.settings import ROLE_PREFIXES, is_connection_key, property_roles

    out: dict[str, str] = {}
    for key, value in properties.items():
        if is_connection_key(key) or key.startswith(ROLE_PREFIXES):
            out[key] = value
        else:
            out.update({f"{role}.override.{key}": value for role in property_roles(key, value)})
    return out


def _check_clients(config: Config, roles: Sequence[str], warn: bool = False) -> None:
    """librdkafka judges the client settings of ``roles`` now, without connecting: an unknown or invalid setting is
    a configuration error naming the key before any task runs."""
    from kafka_s3.io.kafka.settings import check_client_settings, client_settings

    for role in roles:
        try:
            settings = client_settings(config, role, warn=warn and role == "consumer")  # type: ignore[arg-type]
        except ConfigError as exc:
            if exc.key == "bootstrap.servers":
                continue  # checking the settings does not need a cluster
            raise
        check_client_settings(settings, role)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- backup
def open_backup(
    config: ConfigLike,
    *,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> Backup | BackupGroup | TableBackups:
    """The backup of ``config`` (several KCQL statements: a :class:`BackupGroup` running them side by side; Apache
    Iceberg's sink configuration: :class:`TableBackups`, into its tables), ready to ``run_once()`` or
    ``follow(stop)``; ``.engine`` is its Spark engine."""
    from kafka_s3.core.config.iceberg import is_iceberg_sink

    configs = configurations(config, "sink", overrides)
    for one in configs:
        _check_clients(one, ("consumer", "admin"))
    check_spark_runtime(master=master, remote=remote, spark=spark)
    engine = spark_engine(configs[0], "kafka-s3 backup", master, remote, spark)
    if is_iceberg_sink(configs[0]):
        return TableBackups(configs[0], engine)
    return BackupGroup(configs, engine) if len(configs) > 1 else Backup(configs[0], engine)


def backup(
    config: ConfigLike,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> BackupSummary | TablesSummary:
    """Back ``config``'s topics up: to their current ends (``once``), or cycle after cycle until ``stop`` is set,
    returning what the finished cycles committed (into Iceberg tables: a :class:`TablesSummary`)."""
    job = open_backup(config, overrides=overrides, master=master, remote=remote, spark=spark)
    if once:
        return job.run_once()
    job.follow(stop)
    if isinstance(job, TableBackups):
        return job.summary()
    backups = job.backups if isinstance(job, BackupGroup) else [job]
    return BackupSummary(cycles=[c for b in backups for c in b.finished])


# ---------------------------------------------------------------------------------------------------- restore
def restore_options(
    *,
    topics: Sequence[str] | None = None,
    from_timestamp: str | int | None = None,
    until_timestamp: str | int | None = None,
    from_offset: str | None = None,
    until_offset: str | None = None,
    allow_gaps: bool = False,
    verify_deep: bool = False,
    restart: bool = False,
    append: bool = False,
    schemas: bool = False,
    as_of_snapshot: int | None = None,
    as_of_timestamp: str | int | None = None,
) -> RestoreOptions:
    """A restore's options as the CLI's flags give them: times as epoch ms or ISO-8601, offsets as
    ``PARTITION:OFFSET[,...]`` or ``TOPIC:PARTITION:OFFSET``. Bounds that cannot select anything are errors.
    ``as_of_snapshot``/``as_of_timestamp``: an Iceberg table's snapshot to restore (time travel)."""

    def time_of(value: str | int | None, flag: str) -> int | None:
        return None if value is None else parse_time(str(value), flag)

    options = RestoreOptions(
        topics=list(topics) if topics else None,
        from_timestamp=time_of(from_timestamp, "--from-timestamp"),
        until_timestamp=time_of(until_timestamp, "--until-timestamp"),
        from_offsets=parse_offsets(from_offset, "--from-offset"),
        until_offsets=parse_offsets(until_offset, "--until-offset"),
        allow_gaps=allow_gaps,
        verify_deep=verify_deep,
        restart=restart,
        append=append,
        schemas=schemas,
        as_of_snapshot=as_of_snapshot,
        as_of_timestamp=time_of(as_of_timestamp, "--as-of-timestamp"),
    )
    options.check_bounds()
    return options


def open_restore(
    config: ConfigLike,
    options: RestoreOptions | None = None,
    *,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
    engine: Engine | None = None,
) -> Restore:
    """The restore of one configuration (one KCQL statement), ready to ``plan()``, ``run()`` or ``follow(stop)``;
    ``.engine`` is its Spark engine (``engine``: share one between restores)."""
    from kafka_s3.core.config.iceberg import is_iceberg_sink

    chosen = _one(config, "source", overrides, options.topics[0] if options and options.topics else None)
    _check_clients(chosen, ("consumer", "producer", "admin"))
    engine = engine or spark_engine(chosen, "kafka-s3 restore", master, remote, spark)
    if is_iceberg_sink(chosen):
        return TableRestore(chosen, engine, options)
    if options is not None and (options.as_of_snapshot is not None or options.as_of_timestamp is not None):
        raise ConfigError(
            "--as-of-snapshot/--as-of-timestamp choose an Iceberg table's snapshot: this configuration restores a "
            "bucket's objects (connector.class=org.apache.iceberg.connect.IcebergSinkConnector names a table's)",
            key="--as-of-snapshot",
        )
    return Restore(chosen, engine, options)


def restore(
    config: ConfigLike,
    options: RestoreOptions | None = None,
    *,
    consumer_groups: str | None = None,
    follow: bool = False,
    stop: threading.Event | None = None,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> RestoreSummary:
    """Restore one configuration's backup: once (the summary says what it restored, and ``unfinished`` what a chunk
    not uploaded yet held back), or, with ``follow``, until ``stop`` is set. ``consumer_groups``: then commit the
    recorded groups fully matching it at their translated offsets (``summary.groups``)."""
    check_spark_runtime(master=master, remote=remote, spark=spark)
    job = open_restore(config, options, overrides=overrides, master=master, remote=remote, spark=spark)
    if follow:
        if consumer_groups is not None:
            raise ConfigError("restore --consumer-groups translates groups after a restore ends: not with --follow")
        job.follow(stop)
        return RestoreSummary()
    summary = job.run()
    if consumer_groups is not None and not summary.unfinished:
        summary.groups = job.translate_groups(consumer_groups)
    return summary


@dataclass
class RestoreDryRun:
    """What ``restore --dry-run`` reports: the plan, the target checks and what would stop the restore."""

    plan: RestorePlanSet
    allow_gaps: bool = False
    schemas: str = ""  # --schemas: what would happen to each subject's ids
    groups: GroupsPlan | None = None  # --consumer-groups: where each group would be committed
    warnings: list[str] = field(default_factory=list)

    @property
    def unfinished(self) -> list[Finding]:
        """What a chunk not uploaded yet would hold back (``--allow-gaps``: skipped instead)."""
        return [] if self.allow_gaps else self.plan.unfinished

    @property
    def exit_code(self) -> int:
        """The code the restore would exit with: 7 not whole, 6 a target or a claim refuses it, 8 it would stop at
        an unfinished chunk, else 0."""
        from kafka_s3.core.errors import BackupIncomplete, BackupUnfinished, PlanError

        if self.plan.blocking and not self.allow_gaps:
            return BackupIncomplete.exit_code
        if self.plan.blockers:
            return PlanError.exit_code
        return BackupUnfinished.exit_code if self.unfinished else 0


def plan_restore(
    restore_job: Restore | ConfigLike,
    options: RestoreOptions | None = None,
    *,
    consumer_groups: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> RestoreDryRun:
    """The dry run of a restore (a job from :func:`open_restore`, or a configuration): its plan and every check a
    run would make, with nothing created, claimed, fenced or produced."""
    from kafka_s3.pipelines.restore.report import oversized

    if not isinstance(restore_job, Restore):
        restore_job = open_restore(restore_job, options, overrides=overrides)
    plan_set = restore_job.plan()
    if plan_set.blocking and not restore_job.options.allow_gaps:
        plan_set.blockers.extend(str(f) for f in plan_set.blocking)
    restore_job.check_targets(plan_set, create=False)
    plan_set.blockers.extend(restore_job.start_refusals(plan_set))
    dry = RestoreDryRun(plan_set, restore_job.options.allow_gaps)
    if restore_job.options.schemas:
        dry.schemas = restore_job.schemas_plan(plan_set)
    if consumer_groups is not None:
        restore_job.current_plan = plan_set
        dry.groups = restore_job.translate_groups(consumer_groups, dry_run=True)
        plan_set.blockers.extend(f"group {g}: {n} active member(s) on the target" for g, n in dry.groups.active.items())
        plan_set.blockers.extend(f"group {g}: {why}" for g, why in dry.groups.denied.items())
    limit = int(restore_job.producer_settings.get("message.max.bytes", 1_000_000))
    dry.warnings = oversized(plan_set, limit)
    return dry


# ---------------------------------------------------------------------------------------------------- inspection
def verify(
    config: ConfigLike,
    *,
    topics: Sequence[str] | None = None,
    deep: bool = False,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> VerifyReport:
    """Is the backup whole? ``deep`` also decodes every object in Spark tasks. The report is ``whole`` when it found
    no problem and something was backed up (its ``verdict`` says what it could not check); a configuration of several
    KCQL statements gives one report of them all."""
    from kafka_s3.pipelines.verify import verify as verify_one

    found = configurations(config, "source", overrides)
    if deep:
        check_spark_runtime(master=master, remote=remote, spark=spark)
    reports = []
    for one in found:
        engine = spark_engine(one, "kafka-s3 verify", master, remote, spark) if deep else None
        reports.append(verify_one(one, engine, list(topics) if topics else None, deep=deep))
    if len(reports) == 1:
        return reports[0]
    merged = VerifyReport(deep=deep, layout="; ".join(sorted({r.layout for r in reports if r.layout})))
    for report in reports:
        merged.checks.update(report.checks)
        merged.empty.extend(report.empty)
        merged.notes.extend(n for n in report.notes if n not in merged.notes)
    return merged


def status(config: ConfigLike, *, overrides: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Where a backup stands per partition: the group's committed offset, the log end and lag, the bucket's committed
    end and its newest data object (the bucket's view where the group has no offset). A bucket that cannot be read
    raises :class:`~kafka_s3.core.errors.StatusWithoutBucket` (exit 3), whose ``rows`` hold Kafka's side."""
    from kafka_s3.core.errors import StatusWithoutBucket
    from kafka_s3.pipelines.status import backup_status

    rows: list[dict[str, Any]] = []
    unread: list[StatusWithoutBucket] = []
    for one in configurations(config, "sink", overrides):
        try:
            rows += backup_status(one)
        except StatusWithoutBucket as partial:
            rows += partial.rows
            unread.append(partial)
    if unread:
        raise StatusWithoutBucket(str(unread[0]), rows)
    return rows


def status_prometheus(config: ConfigLike, *, overrides: Mapping[str, str] | None = None) -> str:
    """``status`` as Prometheus' text format, for a cron job writing node_exporter's textfile collector: the gauges
    a follow run's ``/metrics`` serves that status can tell (lag in records and seconds per partition, time of the
    newest commit), labelled with the backup's name. A bucket that cannot be read raises as :func:`status` does."""
    import time

    from kafka_s3.core.metrics import gauge_families
    from kafka_s3.pipelines.status import backup_status
    from kafka_s3.runtime.metrics import text_format

    now = time.time()
    families = [
        family
        for one in configurations(config, "sink", overrides)
        for family in gauge_families("backup", one["name"], backup_status(one, now=now), now)
    ]
    return text_format(lambda: families).decode()


def read(
    config: ConfigLike,
    *,
    partition: int,
    offset: int,
    count: int = 1,
    topic: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Up to ``count`` records of ``topic[partition]`` from ``offset`` on, as dicts (``topic``, ``partition``,
    ``offset``, ``timestamp``, ``key``, ``value``, ``headers``), reading only the objects (or blocks) that hold them."""
    start = Start("positions", positions=(((None, partition), offset),))
    return list(records(config, offset=start, topics=[topic] if topic else None, count=count, overrides=overrides))


def records(
    config: ConfigLike,
    *,
    offset: int | str | Start = "beginning",
    topics: Sequence[str] | None = None,
    partitions: Sequence[int] | None = None,
    count: int | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """The records of a backup as ``kafka-s3 read`` prints them, partition after partition, as :func:`read` gives
    them: from ``offset`` in kcat's forms (``"beginning"``, ``"end"``, ``N``, ``-N`` before the end,
    ``"s@<epoch ms or ISO-8601>"``, or ``"PARTITION:OFFSET,..."`` choosing the partitions), at most ``count`` of each
    partition (``None``: to the end of the backup), of ``topics`` (default: the configuration's or the bucket's only
    topic) and ``partitions`` (default: all the backup holds). Records are read as they are iterated."""
    from kafka_s3.pipelines.read.lookup import records_from

    start = offset if isinstance(offset, Start) else parse_start(offset)
    chosen = _one(config, "source", overrides, topics[0] if topics else None)
    return records_from(
        chosen, start, list(topics) if topics else None, list(partitions) if partitions else None, count
    )


@dataclass
class GroupsReport:
    """The consumer groups a backup recorded and, after a restore, where each would resume in the target."""

    snapshots: dict[str, list[int]]  # topic -> snapshot times (epoch ms), ascending
    newest: dict[str, dict[str, dict[int, int]]]  # topic -> group -> partition -> committed offset
    translations: GroupsPlan
    restore: str  # the restore whose offset map translates them


def groups(
    config: ConfigLike,
    *,
    regex: str = ".*",
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> GroupsReport:
    """The consumer-group snapshots of the backup and the translation of the groups fully matching ``regex`` into the
    restore's target (read only: needs no transactional id and commits nothing)."""
    job = open_restore(config, overrides=overrides, master=master, remote=remote, spark=spark)
    plan_set = job.plan(probe_transactions=False)
    job.current_plan = plan_set
    manifests = job.plugins.manifests(job.store)
    snapshots, newest = {}, {}
    for topic in sorted(plan_set.targets):
        times = manifests.times(GROUPS, topic)
        snapshots[topic] = times
        newest[topic] = manifests.load(GROUPS, topic, times[-1]).groups if times else {}
    return GroupsReport(snapshots, newest, job.translate_groups(regex, dry_run=True), str(job.config["name"]))


# ---------------------------------------------------------------------------------------------------- retention
def prune(
    config: ConfigLike,
    *,
    before: str | int | None = None,
    older_than: str | int | None = None,
    max_total_bytes: str | int | None = None,
    topics: Sequence[str] | None = None,
    partitions: Sequence[int] | None = None,
    execute: bool = False,
    force: bool = False,
    overrides: Mapping[str, str] | None = None,
) -> PruneReport:
    """The backup's oldest committed chunks that ``before`` (a time: epoch ms or ISO-8601), ``older_than`` (a
    duration: ``30d``, ``12h`` or ms) or ``max_total_bytes`` (per partition: bytes or ``500MiB``) ask to remove —
    whole chunks, oldest first, never the newest — planned, and with ``execute`` removed: the new start recorded in
    the bucket first, the objects deleted after. Refuses to execute while the backup looks live
    (:class:`~kafka_s3.core.errors.BackupLive`, exit 6) unless ``force``."""
    import time

    from kafka_s3.core.manifest import ManifestStore
    from kafka_s3.core.prune import Selectors, parse_duration, parse_size
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.backup.plugins import BackupPlugins
    from kafka_s3.pipelines.prune import prune as prune_one

    cutoffs = []
    if before is not None:
        cutoffs.append(before if isinstance(before, int) else parse_time(before, "--before"))
    if older_than is not None:
        age = older_than if isinstance(older_than, int) else parse_duration(older_than)
        cutoffs.append(int(time.time() * 1000) - age)
    size = (
        max_total_bytes if isinstance(max_total_bytes, int) or max_total_bytes is None else parse_size(max_total_bytes)
    )
    selectors = Selectors(before=max(cutoffs) if cutoffs else None, max_bytes=size)
    reports = []
    for one in configurations(config, "sink", overrides):
        store = StoreSpec.from_config(one).open()
        store.check()
        manifests = ManifestStore(store, BackupPlugins.from_config(one).manifest_root, one["directory.delim"])
        reports.append(
            prune_one(
                one,
                manifests,
                selectors,
                topics=list(topics) if topics else None,
                partitions=list(partitions) if partitions else None,
                execute=execute,
                force=force,
            )
        )
    merged = reports[0]
    for report in reports[1:]:
        merged.partitions += report.partitions
        merged.snapshots += report.snapshots
        merged.notes += [n for n in report.notes if n not in merged.notes]
        merged.live = merged.live or report.live
    return merged


# ---------------------------------------------------------------------------------------------------- compaction
def compact(
    config: ConfigLike,
    *,
    target_bytes: str | int | None = None,
    target_records: int | None = None,
    topics: Sequence[str] | None = None,
    partitions: Sequence[int] | None = None,
    dry_run: bool = False,
    overrides: Mapping[str, str] | None = None,
    master: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> CompactReport:
    """Merge the backup's consecutive small committed chunks, per partition, into chunks of up to ``target_bytes``
    (bytes or ``64MiB``; default ``compact.target.bytes``) and/or ``target_records`` (``compact.target.records``), in
    a Spark job: the same records in the same order, names valid for the layout, the originals deleted only once the
    merged chunk is recorded (a crash leaves the backup whole; the next run finishes it). Only chunks older than the
    newest committed one (a running backup's tail) are merged. ``dry_run``: the plan only. A prefix without kafka-s3
    manifests, or a peer's layout, is refused (:class:`~kafka_s3.core.errors.PlanError`, exit 6)."""
    from kafka_s3.core.compact import Target
    from kafka_s3.core.prune import parse_size
    from kafka_s3.pipelines.compact import compact as compact_one

    if not dry_run:
        check_spark_runtime(master=master, remote=remote, spark=spark)
    reports = []
    for one in configurations(config, "sink", overrides):
        size = one["compact.target.bytes"] if target_bytes is None else target_bytes
        target = Target.of(
            size if isinstance(size, int) else parse_size(size, "--target-bytes"),
            one["compact.target.records"] if target_records is None else target_records,
        )
        engine = None if dry_run else spark_engine(one, "kafka-s3 compact", master, remote, spark)
        reports.append(
            compact_one(
                one,
                engine,
                target=target,
                topics=list(topics) if topics else None,
                partitions=list(partitions) if partitions else None,
                dry_run=dry_run,
            )
        )
    merged = reports[0]
    for report in reports[1:]:
        merged.groups += report.groups
        merged.leftovers += report.leftovers
        merged.notes += [n for n in report.notes if n not in merged.notes]
    return merged


# ---------------------------------------------------------------------------------------------------- configuration
@dataclass
class Validation:
    """A configuration checked as every command taking it would check it: its statements as ``side`` reads them, the
    other side it was checked as too (``also``: a backup's file is a restore's), and the warnings they gave."""

    configs: list[Config]
    side: Side
    also: list[Config] = field(default_factory=list)  # the statements as the other side reads them

    @property
    def warnings(self) -> list[str]:
        """Each once: the other side's warning about a key (``'x' is not a known restore (source) property``) is the
        same as this side's, and not repeated."""
        own = {w for config in self.configs for w in config.warnings}
        name = self.configs[0].definition.name
        return sorted(own | {w for c in self.also for w in c.warnings if w.replace(c.definition.name, name) not in own})


def validate(config: ConfigLike, *, side: Side | None = None, overrides: Mapping[str, str] | None = None) -> Validation:
    """Check ``config`` as every command that would take it checks it (property values, Kafka client settings, store
    settings, plugins, topic renames), without connecting to anything: a backup's configuration is checked as the
    restore's too, since one file serves both (``side`` names one side to check alone). A problem is a
    :class:`~kafka_s3.core.errors.ConfigError` naming the key."""
    chosen = side or side_of(config)
    found = _parsed(config, chosen, overrides)
    _log_warnings(found)
    for one in found:
        _check_side(one, chosen)
    checked = Validation(found, chosen, _as_restore_too(config, overrides) if side is None and chosen == "sink" else [])
    for warning in sorted(set(checked.warnings) - {w for one in found for w in one.warnings}):
        log.warning("%s", warning)
    return checked


def _as_restore_too(config: ConfigLike, overrides: Mapping[str, str] | None) -> list[Config]:
    """A backup's configuration parsed and checked as the restore's it doubles as; a problem says so (a file meant
    for backups alone is checked with ``--connector sink``)."""
    try:
        found = _parsed(config, "source", overrides)
        for one in found:
            _check_side(one, "source")
    except ConfigError as exc:
        raise ConfigError(
            f"as a restore's configuration (a backup's file doubles as one; --connector sink checks the backup "
            f"alone): {exc}",
            key=exc.key,
        ) from None
    return found


def _check_side(config: Config, side: Side) -> None:
    """What a backup (``sink``) or a restore, ``read`` and ``verify`` (``source``) check before connecting."""
    from kafka_s3.io.stores.spec import StoreSpec

    _check_clients(config, ("consumer", "producer", "admin"), warn=True)
    StoreSpec.from_config(config)
    if side == "sink":
        from kafka_s3.pipelines.backup.plugins import BackupPlugins

        BackupPlugins.from_config(config)
    else:
        from kafka_s3.core.transforms import topic_router
        from kafka_s3.pipelines.read.plugins import ReadPlugins

        if config["format.class"]:  # else found in the bucket when the command runs
            ReadPlugins.from_config(config)
        topic_router(config)


@dataclass(frozen=True)
class BucketCreation:
    url: str
    created: bool  # False: it existed already


def create_bucket(
    name: str, *, config: ConfigLike | None = None, overrides: Mapping[str, str] | None = None
) -> BucketCreation:
    """Create bucket ``name`` with the store settings of ``config`` (endpoint, credentials, TLS), if it does not exist
    yet (backups never create buckets themselves)."""
    from kafka_s3.core.errors import BucketNotFoundError
    from kafka_s3.io.stores.spec import StoreSpec

    store = StoreSpec.from_config(_store_settings(config, {**(overrides or {}), "s3.bucket.name": name})).open()
    try:
        store.check()  # S3 answers the re-creation of one's own bucket with success: ask first, to say what happened
    except BucketNotFoundError:
        store.create_bucket()
        return BucketCreation(str(store.url), True)
    return BucketCreation(str(store.url), False)


def _store_settings(config: ConfigLike | None, overrides: Mapping[str, str]) -> Config:
    """The store settings of ``config`` (endpoint, credentials, TLS; none: the AWS environment's) with
    ``overrides``, as a configuration a store opens from (its KCQL statements left out: they set their own bucket)."""
    from kafka_s3.core.config.loader import interpolate, read_raw
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.peers import without_statements

    raw: dict[str, Any] = {"name": "bucket", "topics": "-", "flush.size": "1", "format.class": "json"}
    if isinstance(config, Config):
        raw.update({k: str(v) for k, v in config.originals.items()})
    elif isinstance(config, Mapping):
        raw.update({k: str(v) for k, v in config.items()})
    elif config is not None:
        raw.update(interpolate(read_raw(os.fspath(config))))
    raw = without_statements(raw)
    raw.update(overrides)
    return SINK.parse(raw)


# ---------------------------------------------------------------------------------------------------- catalogue
def _catalogue_location(
    location: str | None, config: ConfigLike | None, overrides: Mapping[str, str] | None
) -> tuple[Store, str, Config]:
    """The store, prefix and settings ``kafka-s3 ls``/``info`` look at: ``s3://BUCKET[/PREFIX]``, else the
    configuration's bucket and ``topics.dir``. The bucket is checked (:class:`BucketNotFoundError`, exit 3)."""
    from kafka_s3.io.stores.spec import StoreSpec

    settings = dict(overrides or {})
    prefix = None
    if location is not None:
        scheme, _, rest = location.partition("://")
        bucket, _, prefix = rest.partition("/")
        if scheme != "s3" or not bucket:
            raise ConfigError(f"{location!r} is not an s3://BUCKET[/PREFIX] location")
        settings["s3.bucket.name"] = bucket
    elif config is None:
        raise ConfigError("name the bucket (s3://BUCKET[/PREFIX]) or a configuration (--config)")
    parsed = _store_settings(config, settings)
    store = StoreSpec.from_config(parsed).open()
    store.check()
    return store, parsed["topics.dir"] if prefix is None else prefix, parsed


def ls(
    location: str | None = None,
    *,
    config: ConfigLike | None = None,
    topics: Sequence[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> list[BackupEntry]:
    """Every backup in a bucket (``s3://BUCKET[/PREFIX]``, or the bucket of ``config``), found and described with S3
    access alone: per backup its layout, format and topics, per partition the first and last offset and record time,
    the pruned start, objects and bytes. :class:`~kafka_s3.core.errors.NoBackupFound` (exit 5) when there is none."""
    from kafka_s3.pipelines.catalogue import catalogue

    store, prefix, parsed = _catalogue_location(location, config, overrides)
    delim = parsed["directory.delim"]
    names = {} if location is not None else {str(parsed["topics.dir"]).strip(delim): str(parsed["name"])}
    try:  # with a configuration alone: its whole bucket, its own backup named
        return catalogue(store, "" if location is None else prefix, delim, names, topics)
    finally:
        store.close()


def info(
    location: str | None = None,
    *,
    config: ConfigLike | None = None,
    topics: Sequence[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> BackupDetails:
    """One backup in depth (``s3://BUCKET/PREFIX``, or the bucket and ``topics.dir`` of ``config``): what ``ls``
    tells, plus the snapshot records it holds, its last cycle, its unfinished chunks and its compaction state."""
    from kafka_s3.pipelines.catalogue import details

    store, prefix, parsed = _catalogue_location(location, config, overrides)
    try:
        name = str(parsed["name"]) if config is not None and location is None else None
        return details(store, prefix, name, parsed["directory.delim"], topics)
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------------- Spark server
@dataclass(frozen=True)
class ServerStart:
    server: ServerState
    started: bool  # False: a server fit for plain commands was running already


def server_status() -> ServerState | None:
    """The user's Spark server (the one plain commands run their jobs on, :mod:`kafka_s3.spark.server`): its URL,
    process, start time, log file, versions and idle timeout; None when none runs (``kafka-s3 server status``)."""
    from kafka_s3.spark import server

    return server.status()


def server_start() -> ServerStart:
    """Start the user's Spark server now, unless one fit for plain commands runs, and wait until it is ready (its
    workers warm). One that fails to start is a :class:`~kafka_s3.core.errors.SparkServerFailed` (exit 1) ending
    with the tail of its log (``kafka-s3 server start``)."""
    from kafka_s3.spark import server

    state, started = server.start()
    return ServerStart(state, started)


def server_stop() -> ServerState | None:
    """Stop the user's Spark server (its JVM and Python workers): the state it had, None when none ran
    (``kafka-s3 server stop``). The next plain command starts a new one."""
    from kafka_s3.spark import server

    return server.stop()


# ---------------------------------------------------------------------------------------------------- versions
def versions() -> dict[str, str]:
    """What this installation runs on: kafka-s3, Python, pyspark, pyarrow, confluent-kafka (and its librdkafka) and
    the Java runtime Spark would start (``kafka-s3 --version``)."""
    import platform

    import confluent_kafka
    import pyarrow
    import pyspark

    from kafka_s3 import __version__
    from kafka_s3.spark.java import java_version

    return {
        "kafka-s3": __version__,
        "Python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "confluent-kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "Java": java_version(),
    }
