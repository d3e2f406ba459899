"""``kafka-s3``: the command line. User errors print one line and a non-zero exit code (tracebacks with --debug)."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_s3.core import logs
from kafka_s3.core.config.model import Config, ConfigDef
from kafka_s3.core.errors import BackupIncomplete, ConfigError, KafkaS3Error, PlanError

if TYPE_CHECKING:
    from kafka_s3.cli.signals import Interrupts
    from kafka_s3.io.kafka.settings import Role
    from kafka_s3.pipelines.backup.driver import Backup
    from kafka_s3.pipelines.read.options import RestoreOptions
    from kafka_s3.pipelines.restore.driver import Restore
    from kafka_s3.spark.engine import SparkEngine

log = logging.getLogger("kafka_s3.cli")

SOURCE_CLASSES = (
    "io.confluent.connect.s3.source.S3SourceConnector",
    "S3SourceConnector",
    "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector",
)


# ---------------------------------------------------------------------------------------------------- config helpers
def _overrides(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def load_config(path: str, definition: ConfigDef, overrides: Sequence[str] = ()) -> Config:
    from kafka_s3.core.config.loader import load

    config = load(definition, path, _overrides(overrides), register_secrets=logs.register_secrets)
    for warning in config.warnings:
        log.warning("%s", warning)
    return config


def load_configs(path: str, definition: ConfigDef, overrides: Sequence[str] = ()) -> list[Config]:
    """Every configuration of a file: one per KCQL statement of ``connect.s3.kcql``, else the file's one."""
    from kafka_s3.core.config.loader import load_all

    configs = load_all(definition, path, _overrides(overrides), register_secrets=logs.register_secrets)
    warned: set[str] = set()
    for config in configs:
        for warning in config.warnings:
            if warning not in warned:
                warned.add(warning)
                log.warning("%s", warning)
    return configs


def _statement_label(config: Config) -> str:
    from kafka_s3.core.config.kcql import KCQL_KEY

    return config[KCQL_KEY] or ", ".join(config["topics"])


def _definition_for(path: str, forced: str | None) -> ConfigDef:
    from kafka_s3.core.config.loader import read_raw
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE

    if forced == "sink":
        return SINK
    if forced == "source":
        return SOURCE
    return SOURCE if read_raw(path).get("connector.class", "") in SOURCE_CLASSES else SINK


# ---------------------------------------------------------------------------------------------------- commands
def cmd_config_show(args: argparse.Namespace) -> int:
    definition = _definition_for(args.config, args.connector)
    configs = load_configs(args.config, definition, args.set)
    if args.json:
        shown = [
            {k: ({"value": v, "default": is_default} if args.defaults else v) for k, v, is_default in config.as_rows()}
            for config in configs
        ]
        print(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
        return 0
    for number, config in enumerate(configs, 1):
        rows = config.as_rows()
        if len(configs) > 1:
            print(f"{'' if number == 1 else chr(10)}# statement {number}: {_statement_label(config)}")
        width = max(len(k) for k, _, _ in rows)
        for key, value, is_default in rows:
            print(f"{key:<{width}}  {value}{'  (default)' if is_default else ''}")
    return 0


def cmd_config_validate(args: argparse.Namespace) -> int:
    definition = _definition_for(args.config, args.connector)
    configs = load_configs(args.config, definition, args.set)
    for config in configs:
        _check_clients(config, ("consumer", "producer", "admin"), warn=True)
        _check_plugins(config, definition)
    warnings = len({w for config in configs for w in config.warnings})
    statements = f", {len(configs)} KCQL statements" if len(configs) > 1 else ""
    print(
        f"{args.config}: valid {definition.name} configuration{statements}"
        + (f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else "")
    )
    return 0


def _check_clients(config: Config, roles: Sequence[Role], warn: bool = False) -> None:
    """Let librdkafka judge the Kafka client settings of ``roles`` now (an unknown ``consumer.override.*`` name or a
    bad value is a configuration error naming the key, before any task runs), without connecting."""
    from kafka_s3.io.kafka.settings import check_client_settings, client_settings

    for role in roles:
        try:
            settings = client_settings(config, role, warn=warn and role == "consumer")
        except ConfigError as exc:
            if exc.key == "bootstrap.servers":
                continue  # checking the settings does not need a cluster
            raise
        check_client_settings(settings, role)


def _check_plugins(config: Config, definition: ConfigDef) -> None:
    """Build the store settings and instantiate the configured plugins (no connection), so cross-setting problems
    surface at validation time as they would at the start of a run."""
    from kafka_s3.io.stores.spec import StoreSpec

    StoreSpec.from_config(config)
    if "flush.size" in definition.props:
        from kafka_s3.pipelines.backup.plugins import BackupPlugins

        BackupPlugins.from_config(config)


def _engine(args: argparse.Namespace, config: Config, app_name: str) -> SparkEngine:
    """The Spark engine of a command, started on first use (``--master`` or ``--remote``, and the file's ``spark.*``
    keys)."""
    from kafka_s3.spark.engine import SparkEngine
    from kafka_s3.spark.session import spark_settings

    return SparkEngine(master=args.master, remote=args.remote, app_name=app_name, conf=spark_settings(config.extras))


def cmd_backup(args: argparse.Namespace) -> int:
    from kafka_s3.cli.signals import Interrupts
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.pipelines.backup.driver import Backup

    configs = load_configs(args.config, SINK, args.set)
    for config in configs:
        _check_clients(config, ("consumer", "admin"))
    if len(configs) > 1:
        return _backup_statements(args, configs)
    engine = _engine(args, configs[0], "kafka-s3 backup")
    backup = Backup(configs[0], engine)
    interrupts = Interrupts(engine)
    with interrupts as stop:
        try:
            if args.once:
                from kafka_s3.cli.progress import BackupProgress

                with BackupProgress(backup, enabled=not args.no_progress) as progress:
                    summary = backup.run_once()
                if interrupts.signum is None:
                    progress.print_summary(summary)
            else:
                log.info(
                    "following %s; Ctrl-C stops (abandoning the running cycle)", ", ".join(sorted(backup.topics()))
                )
                backup.follow(stop)
        except Exception:
            if interrupts.signum is None:
                raise
    if interrupts.signum is not None:
        return _stopped_backup(interrupts, [backup])
    return 0


def _stopped_backup(interrupts: Interrupts, backups: Sequence[Backup]) -> int:
    """The one line a backup stopped by a signal prints (what its finished cycles committed), and its exit code."""
    cycles = [report for backup in backups for report in backup.finished]
    print(
        f"kafka-s3: stopped by {interrupts.name}: committed {sum(c.records for c in cycles)} records in "
        f"{sum(c.objects for c in cycles)} objects ({sum(c.bytes for c in cycles) / 1e6:.1f} MB) in {len(cycles)} "
        "cycles; the running cycle was abandoned and nothing of it committed (run again to continue)",
        file=sys.stderr,
    )
    return interrupts.exit_code


def _backup_statements(args: argparse.Namespace, configs: list[Config]) -> int:
    """Several KCQL statements: one backup per statement, all in this process and Spark session."""
    from kafka_s3.cli.progress import print_backup_summary
    from kafka_s3.cli.signals import Interrupts
    from kafka_s3.pipelines.backup.group import BackupGroup

    engine = _engine(args, configs[0], "kafka-s3 backup")
    group = BackupGroup(configs, engine)
    interrupts = Interrupts(engine)
    with interrupts as stop:
        try:
            if args.once:
                summary = group.run_once()
                if interrupts.signum is None:
                    print_backup_summary(summary)
            else:
                log.info(
                    "following %s (%d KCQL statements); Ctrl-C stops (abandoning the running cycles)",
                    ", ".join(sorted(group.topics())),
                    len(configs),
                )
                group.follow(stop)
        except Exception:
            if interrupts.signum is None:
                raise
    if interrupts.signum is not None:
        return _stopped_backup(interrupts, group.backups)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets, parse_time
    from kafka_s3.pipelines.restore.driver import Restore

    configs = load_configs(args.config, SOURCE, args.set)
    options = RestoreOptions(
        topics=[t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None,
        from_timestamp=parse_time(args.from_timestamp, "--from-timestamp") if args.from_timestamp else None,
        until_timestamp=parse_time(args.until_timestamp, "--until-timestamp") if args.until_timestamp else None,
        from_offsets=parse_offsets(args.from_offset, "--from-offset"),
        until_offsets=parse_offsets(args.until_offset, "--until-offset"),
        allow_gaps=args.allow_gaps,
        verify_deep=args.verify_deep,
        restart=args.restart,
        append=args.append,
        schemas=args.schemas,
    )
    _check_bounds(options)
    for config in configs:
        _check_clients(config, ("consumer", "producer", "admin"))
    if len(configs) > 1:
        return _restore_statements(args, configs, options)
    engine = _engine(args, configs[0], "kafka-s3 restore")
    restore = Restore(configs[0], engine, options)
    if args.dry_run:
        return _dry_run(restore, args.consumer_groups)
    if args.consumer_groups is not None and args.follow:
        raise ConfigError("restore --consumer-groups translates groups after a restore ends: not with --follow")
    from kafka_s3.cli.progress import RestoreProgress, print_restore_summary
    from kafka_s3.cli.signals import Interrupts

    interrupts = Interrupts(engine)
    with interrupts as stop:
        try:
            if args.follow:
                restore.follow(stop)
            else:
                with RestoreProgress(restore, enabled=not args.no_progress):
                    summary = restore.run()
                if interrupts.signum is None:
                    print_restore_summary(summary)
                    if restore.current_plan is not None and restore.current_plan.schema_note:
                        print(restore.current_plan.schema_note)
                    if summary.unfinished:
                        return _stopped_unfinished(summary.unfinished, args.consumer_groups is not None)
                if interrupts.signum is None and args.consumer_groups is not None:
                    for line in restore.translate_groups(args.consumer_groups).lines():
                        print(line)
        except Exception:
            if interrupts.signum is None:
                raise
    if interrupts.signum is not None:
        return _stopped_restore(interrupts, [restore])
    return 0


def _stopped_unfinished(findings: Sequence[object], groups: bool = False) -> int:
    """A restore that stopped before a chunk the backup has not finished uploading: what it holds back, and exit 8
    (nothing after such a chunk was produced; running the same command again continues from it)."""
    from kafka_s3.core.errors import BackupUnfinished

    lines = "".join(f"\n  {f}" for f in findings)
    print(
        f"kafka-s3: error: stopped at a chunk the backup has not finished uploading; run again once it is there:"
        f"{lines}"
        + ("\nconsumer groups were not translated (they are, once the restore is complete)" if groups else ""),
        file=sys.stderr,
    )
    return BackupUnfinished.exit_code


def _stopped_restore(interrupts: Interrupts, restores: Sequence[Restore]) -> int:
    """The one line a restore stopped by a signal prints, and its exit code."""
    print(
        f"kafka-s3: stopped by {interrupts.name}: {sum(r.restored_records for r in restores)} records restored by "
        "finished jobs; the running job was abandoned: progress is committed only for records already in the "
        "target (run the same command to resume)",
        file=sys.stderr,
    )
    return interrupts.exit_code


def _check_bounds(options: RestoreOptions) -> None:
    """Bounds that cannot select any record are errors, not empty restores (``until`` is exclusive)."""
    start, until = options.from_timestamp, options.until_timestamp
    if start is not None and until is not None and until <= start:
        raise ConfigError(
            f"--until-timestamp ({until} ms) is not after --from-timestamp ({start} ms): no record can be selected",
            key="--until-timestamp",
        )
    for (topic, partition), until in sorted(options.until_offsets.items(), key=str):
        for (from_topic, from_partition), start in options.from_offsets.items():
            if from_partition != partition or (topic is not None and from_topic is not None and topic != from_topic):
                continue
            if until <= start:
                where = f"{topic}:{partition}" if topic is not None else f"partition {partition}"
                raise ConfigError(
                    f"--until-offset {until} is not above --from-offset {start} for {where}: no record can be selected",
                    key="--until-offset",
                )


def _restore_statements(args: argparse.Namespace, configs: list[Config], options: RestoreOptions) -> int:
    """Several KCQL statements: each statement's objects restored in turn, in one Spark session."""
    from kafka_s3.cli.progress import print_restore_summary
    from kafka_s3.pipelines.restore.driver import Restore

    if args.follow:
        raise ConfigError("restore --follow takes one KCQL statement: select one with --set connect.s3.kcql=...")
    if options.topics:
        configs = [c for c in configs if set(c["topics"]) & set(options.topics)]
    from kafka_s3.cli.signals import Interrupts

    engine = _engine(args, configs[0], "kafka-s3 restore")
    interrupts = Interrupts(engine)
    done: list[Restore] = []
    with interrupts as stop:
        for config in configs:
            if stop.is_set():
                break
            restore = Restore(config, engine, options)
            print(f"# {_statement_label(config)}")
            if args.dry_run:
                code = _dry_run(restore, args.consumer_groups)
                if code:
                    return code
                continue
            done.append(restore)
            try:
                summary = restore.run()
                print_restore_summary(summary)
                if restore.current_plan is not None and restore.current_plan.schema_note:
                    print(restore.current_plan.schema_note)
                if summary.unfinished:
                    return _stopped_unfinished(summary.unfinished, args.consumer_groups is not None)
                if args.consumer_groups is not None and not stop.is_set():
                    for line in restore.translate_groups(args.consumer_groups).lines():
                        print(line)
            except Exception:
                if interrupts.signum is None:
                    raise
    if interrupts.signum is not None:
        return _stopped_restore(interrupts, done)
    return 0


def _dry_run(restore: Restore, consumer_groups: str | None = None) -> int:
    """Print the plan; exit as the restore would (a backup that is not whole: the same code as the restore's).
    ``consumer_groups``: also the offsets ``--consumer-groups`` would commit."""
    from kafka_s3.pipelines.restore.report import describe_plan, oversized

    plan_set = restore.plan()
    if plan_set.blocking and not restore.options.allow_gaps:
        plan_set.blockers.extend(str(f) for f in plan_set.blocking)
    unfinished = [] if restore.options.allow_gaps else plan_set.unfinished
    restore.check_targets(plan_set, create=False)
    plan_set.blockers.extend(restore.start_refusals(plan_set))
    print(describe_plan(plan_set))
    if restore.options.schemas:
        print(restore.schemas_plan(plan_set))
    if consumer_groups is not None:
        restore.current_plan = plan_set
        groups = restore.translate_groups(consumer_groups, dry_run=True)
        plan_set.blockers.extend(f"group {g}: {n} active member(s) on the target" for g, n in groups.active.items())
        plan_set.blockers.extend(f"group {g}: {why}" for g, why in groups.denied.items())
        print("consumer groups (restore --consumer-groups):")
        for line in groups.lines():
            print(f"  {line}")
    for warning in oversized(plan_set, int(restore.producer_settings.get("message.max.bytes", 1_000_000))):
        print(f"warning: {warning}")
    if plan_set.blocking and not restore.options.allow_gaps:
        return BackupIncomplete.exit_code
    if plan_set.blockers:
        return PlanError.exit_code
    return _stopped_unfinished(unfinished) if unfinished else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from kafka_s3.cli.progress import render_verify_report
    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.pipelines.verify import verify

    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    reports = []
    for config in load_configs(args.config, SOURCE, args.set):
        engine = _engine(args, config, "kafka-s3 verify") if args.deep else None
        reports.append(verify(config, engine, topics, deep=args.deep))
    if args.json:
        docs = [r.to_dict() for r in reports]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))
    else:
        for report in reports:
            print(render_verify_report(report))
    return 0 if all(report.whole for report in reports) else BackupIncomplete.exit_code


def cmd_read(args: argparse.Namespace) -> int:
    from kafka_s3.cli.read_output import render
    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.pipelines.read.lookup import parse_position, read_records

    partition, offset = parse_position(args.offset)
    configs = load_configs(args.config, SOURCE, args.set)
    if len(configs) > 1:
        if not args.topic:
            raise ConfigError("the file has several KCQL statements: choose one with --topic")
        configs = [c for c in configs if args.topic in c["topics"]]
        if not configs:
            raise ConfigError(f"no KCQL statement of the file reads topic {args.topic!r}")
    records = read_records(configs[0], partition, offset, args.count, args.topic)
    topic = records[0]["topic"] or args.topic or ""
    out, notes = render(records, topic, partition, offset, args.format, args.base64)
    for line in out:
        print(line)
    sys.stdout.flush()
    for note in notes:
        print(note, file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kafka_s3.cli.progress import render_status
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.pipelines.status import backup_status

    rows = [row for config in load_configs(args.config, SINK, args.set) for row in backup_status(config)]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(render_status(rows))
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    """The consumer groups a backup recorded (every snapshot's time, the newest one's offsets) and, where a restore
    of it recorded its offset map in the target cluster, where each group would resume there."""
    import datetime as dt

    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.pipelines.restore.driver import Restore

    config = load_config(args.config, SOURCE, args.set)
    restore = Restore(config, _engine(args, config, "kafka-s3 groups"))
    plan_set = restore.plan(probe_transactions=False)  # read-only: no transactional id needed
    restore.current_plan = plan_set
    manifests = restore.plugins.manifests(restore.store)

    def iso(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    doc: dict[str, object] = {"topics": {}}
    lines = []
    for topic in sorted(plan_set.targets):
        times = manifests.group_snapshot_times(topic)
        newest = manifests.group_snapshot(topic, times[-1]) if times else None
        doc["topics"][topic] = {  # type: ignore[index]
            "snapshots": times,
            "groups": {g: {str(p): o for p, o in ps.items()} for g, ps in (newest.groups if newest else {}).items()},
        }
        lines.append(
            f"{topic}: {len(times)} consumer-group snapshot(s)" + (f", newest {iso(times[-1])}" if times else "")
        )
        lines.extend(f"  snapshot {iso(at)} ({at})" for at in times)
        for group, offsets in sorted((newest.groups if newest else {}).items()):
            lines.append(f"  group {group}: " + ", ".join(f"[{p}] {o}" for p, o in sorted(offsets.items())))
    translated = restore.translate_groups(args.regex, dry_run=True)
    doc["translations"] = [t.to_dict() for t in translated.translations]
    if translated.translations:
        lines.append(f"translations into the target cluster (restore {config['name']}):")
        lines.extend(f"  {t.line()}" for t in translated.translations)
    doc["denied"] = translated.denied
    lines.extend(
        f"group {g}: restore --consumer-groups would be refused: {why}" for g, why in translated.denied.items()
    )
    print(json.dumps(doc, indent=2) if args.json else "\n".join(lines))
    return 0


def cmd_bucket_create(args: argparse.Namespace) -> int:
    from kafka_s3.core.config.kcql import KCQL_KEY
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.io.stores.spec import StoreSpec

    raw = {"name": "bucket", "topics": "-", "flush.size": "1", "format.class": "json", "s3.bucket.name": args.name}
    if args.config:
        from kafka_s3.core.config.loader import interpolate, read_raw

        stored = {k: v for k, v in interpolate(read_raw(args.config)).items() if k != KCQL_KEY}  # store settings only
        raw = {**raw, **stored, "s3.bucket.name": args.name}
    raw.update(_overrides(args.set))
    config = SINK.parse(raw)
    from kafka_s3.core.errors import BucketNotFoundError

    store = StoreSpec.from_config(config).open()
    try:
        store.check()  # S3 answers the re-creation of one's own bucket with success: ask first, to say what happened
    except BucketNotFoundError:
        store.create_bucket()
        print(f"created bucket {args.name} at {store.url}")
        return 0
    print(f"bucket {args.name} already exists at {store.url}: nothing to do")
    return 0


# ---------------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-s3",
        description="Back Kafka topics up to S3-compatible storage and restore them, on Spark.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    parser.add_argument(
        "--log-format",
        choices=logs.LOG_FORMATS,
        default="text",
        help="text lines (default) or one JSON object per line (time, level, logger, message, fields)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, master: bool = False) -> None:
        p.add_argument("--config", "-c", required=True, help=".properties or Connect REST JSON file")
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a property (repeatable)")
        if master:
            where = p.add_mutually_exclusive_group()
            where.add_argument("--master", help="Spark master URL (default local[*]; e.g. spark://host:7077)")
            where.add_argument(
                "--remote",
                metavar="sc://HOST:PORT",
                help="run the jobs on a Spark Connect server (default $SPARK_REMOTE when no --master is given)",
            )

    backup = sub.add_parser("backup", help="back topics up to the object store")
    common(backup, master=True)
    mode = backup.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="back up to the current end of the topics, then exit")
    mode.add_argument("--follow", action="store_true", help="run forever in cycles (default)")
    backup.add_argument("--no-progress", action="store_true", help="no progress bar")
    backup.set_defaults(func=cmd_backup)

    restore = sub.add_parser("restore", help="restore backed-up topics into Kafka")
    common(restore, master=True)
    restore.add_argument("--follow", action="store_true", help="keep restoring objects written later")
    restore.add_argument("--dry-run", action="store_true", help="print the plan and the target checks, produce nothing")
    restore.add_argument("--topics", help="restore only these source topics (comma-separated)")
    restore.add_argument("--from-timestamp", help="only records at or after this time (epoch ms or ISO-8601)")
    restore.add_argument("--until-timestamp", help="only records before this time (epoch ms or ISO-8601)")
    restore.add_argument("--from-offset", help="PARTITION:OFFSET[,...] (or TOPIC:PARTITION:OFFSET): first offset")
    restore.add_argument("--until-offset", help="PARTITION:OFFSET[,...]: stop before this offset")
    restore.add_argument("--no-progress", action="store_true", help="no progress bar")
    restore.add_argument(
        "--allow-gaps",
        action="store_true",
        help="restore what the bucket holds when objects are missing or damaged (each skipped range is listed)",
    )
    restore.add_argument(
        "--restart",
        action="store_true",
        help="restore from the start where the target holds progress of another restore (other bucket, bounds, "
        "or a re-created target topic)",
    )
    restore.add_argument(
        "--append",
        action="store_true",
        help="restore into target partitions that already hold records no restore's progress accounts for (they "
        "stay; the backup's records are added after them)",
    )
    restore.add_argument(
        "--verify-deep", action="store_true", help="decode every object before producing anything (reads it all twice)"
    )
    restore.add_argument(
        "--schemas",
        action="store_true",
        help="first register the backup's saved Schema Registry subjects in schemas.registry.url, rewriting schema "
        "ids in restored payloads where the target assigns other ids (use it on every run of that restore)",
    )
    restore.add_argument(
        "--consumer-groups",
        nargs="?",
        const=".*",
        metavar="REGEX",
        help="after the restore, commit the recorded consumer groups (all, or those fully matching REGEX) at the "
        "target offsets their source offsets translate to; with --dry-run, print that plan",
    )
    restore.set_defaults(func=cmd_restore)

    read = sub.add_parser(
        "read", help="print records of a backup from an offset (block_gzip: fetches only the block holding it)"
    )
    common(read)
    read.add_argument("--offset", required=True, metavar="P:O", help="partition and offset of the first record")
    read.add_argument("--count", type=int, default=1, help="number of records to print (default 1)")
    read.add_argument("--topic", help="the topic (default: the configuration's or the bucket's only topic)")
    read.add_argument("--base64", action="store_true", help="print keys, values and headers as base64 (binary data)")
    read.add_argument(
        "--format",
        choices=["table", "json", "raw"],
        default="table",
        help="table: partition, offset, time, key, value, headers (default); json: an object per line; raw: values",
    )
    read.set_defaults(func=cmd_read)

    check = sub.add_parser(
        "verify", help="check that the bucket holds the whole backup (coverage, overlaps, sizes, sidecar counts)"
    )
    common(check, master=True)
    check.add_argument("--topics", help="only these topics (comma-separated)")
    check.add_argument("--deep", action="store_true", help="also decode every record (Spark tasks), check counts")
    check.add_argument("--json", action="store_true", help="machine-readable report")
    check.set_defaults(func=cmd_verify)

    status = sub.add_parser("status", help="per partition: committed offset, end offset, lag, last object")
    common(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    groups = sub.add_parser(
        "groups", help="consumer groups a backup recorded, its snapshots and, after a restore, their translations"
    )
    common(groups, master=True)
    groups.add_argument("--regex", default=".*", help="only groups fully matching this regular expression")
    groups.add_argument("--json", action="store_true")
    groups.set_defaults(func=cmd_groups)

    config = sub.add_parser("config", help="inspect a configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    for name, func, help_text in (
        ("show", cmd_config_show, "print the resolved configuration (defaults marked, secrets hidden)"),
        ("validate", cmd_config_validate, "check a configuration without running anything"),
    ):
        p = config_sub.add_parser(name, help=help_text)
        common(p)
        p.add_argument("--connector", choices=["sink", "source"], help="force the connector type")
        if name == "show":
            p.add_argument("--json", action="store_true")
            p.add_argument(
                "--defaults",
                action="store_true",
                help='with --json: each key as {"value": ..., "default": true|false}',
            )
        p.set_defaults(func=func)

    bucket = sub.add_parser("bucket", help="bucket helpers")
    bucket_sub = bucket.add_subparsers(dest="bucket_command", required=True)
    create = bucket_sub.add_parser("create", help="create a bucket (backups never create buckets themselves)")
    create.add_argument("name")
    create.add_argument("--config", "-c", help="take the store settings from this file")
    create.add_argument("--set", action="append", metavar="KEY=VALUE")
    create.set_defaults(func=cmd_bucket_create)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Nothing the command prints may carry a secret (a record printed by `read` is the user's data: left as is).
    if not isinstance(sys.stderr, logs.RedactingStream):
        sys.stderr = logs.RedactingStream(sys.stderr)
    if args.command != "read" and not isinstance(sys.stdout, logs.RedactingStream):
        sys.stdout = logs.RedactingStream(sys.stdout)
    logs.setup(verbose=not args.quiet, debug=args.debug, fmt=args.log_format)
    if args.quiet:
        logging.getLogger("kafka_s3").setLevel(logging.WARNING)
    try:
        code: int = args.func(args)  # one of the cmd_* functions
        return code
    except KafkaS3Error as exc:
        if args.debug:  # the trace, then the same line and exit code as without --debug (README's table)
            traceback.print_exc()
        print(f"kafka-s3: error: {logs.redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kafka-s3: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # Spark/py4j wrap task failures; show their root message on one line
        if args.debug:
            traceback.print_exc()
        print(f"kafka-s3: error: {logs.redact(_root_message(exc))}", file=sys.stderr)
        return 1


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Unavailable|Failed|Incomplete)): (\S.*)$")


def _root_message(exc: BaseException) -> str:
    """One line for an exception that is not the project's own: the last ``Kind: message`` line of a Python
    worker's traceback that Spark wraps (its own first line, "An exception was thrown from the Python worker:",
    says nothing), else the first line of the text."""
    text = str(exc)
    for marker in ("kafka_s3.core.errors.", "KafkaS3Error: "):
        if marker in text:
            tail = text.split(marker)[-1]
            return tail.splitlines()[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [m for m in map(_EXCEPTION_LINE.match, lines) if m]
    if raised and not lines[0].startswith(raised[-1].group(1)):
        kind, message = raised[-1].groups()
        return f"{kind.rsplit('.', 1)[-1]}: {message}"[:500] + " (--debug shows the trace)"
    return (lines[0][:500] + " (--debug shows the trace)") if lines else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
