"""``kafka-s3 restore``: a dry run, a one-shot or a following restore, its consumer groups, and a clean stop."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, spark, topic_names
from kafka_s3.cli.signals import Interrupts
from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import BackupUnfinished, ConfigError


def options_of(args: argparse.Namespace) -> api.RestoreOptions:
    return api.restore_options(
        topics=topic_names(args) or None,
        from_timestamp=args.from_timestamp,
        until_timestamp=args.until_timestamp,
        from_offset=args.from_offset,
        until_offset=args.until_offset,
        allow_gaps=args.allow_gaps,
        verify_deep=args.deep,
        restart=args.restart,
        append=args.append,
        schemas=args.schemas,
        as_of_snapshot=args.as_of_snapshot,
        as_of_timestamp=args.as_of_timestamp,
    )


def cmd_restore(args: argparse.Namespace) -> int:
    options = options_of(args)
    configs = api.configurations(args.config, "source", overrides(args))
    if options.topics and len(configs) > 1:
        configs = [c for c in configs if set(c["topics"]) & set(options.topics)]
        if not configs:
            raise ConfigError(f"no KCQL statement of the file reads topic(s) {', '.join(options.topics)}")
    if not args.dry_run:  # a restore runs Spark jobs: no Java fit for Spark is said before Kafka or S3 is touched
        api.check_spark_runtime(**spark(args))
    if len(configs) > 1:
        return _statements(args, configs, options)
    job = api.open_restore(configs[0], options, **spark(args))
    if args.dry_run:
        return dry_run(job, args.consumer_groups)
    if args.consumer_groups is not None and args.follow:
        raise ConfigError("restore --consumer-groups translates groups after a restore ends: not with --follow")
    from kafka_s3.cli.progress import RestoreProgress

    interrupts = Interrupts(job.engine)
    with interrupts as stop:
        try:
            if args.follow:
                job.follow(stop)
            else:
                with RestoreProgress(job, enabled=not args.no_progress):
                    summary = job.run()
                if interrupts.signum is None:
                    code = _report(job, summary, args.consumer_groups)
                    if code:
                        return code
        except Exception:
            if interrupts.signum is None:
                raise
    if interrupts.signum is not None:
        return stopped(interrupts, [job])
    return 0


def _report(job: api.Restore, summary: api.RestoreSummary, consumer_groups: str | None) -> int:
    """Print what a one-shot restore did; translate the consumer groups when it is complete."""
    from kafka_s3.cli.render import print_restore_summary

    print_restore_summary(summary)
    if job.current_plan is not None and job.current_plan.schema_note:
        print(job.current_plan.schema_note)
    if summary.unfinished:
        return stopped_unfinished(summary.unfinished, consumer_groups is not None)
    if consumer_groups is not None:
        for line in job.translate_groups(consumer_groups).lines():
            print(line)
    return 0


def _statements(args: argparse.Namespace, configs: list[Config], options: api.RestoreOptions) -> int:
    """Several KCQL statements: each statement's objects restored in turn, in one Spark session."""
    if args.follow:
        raise ConfigError("restore --follow takes one KCQL statement: select one with --set connect.s3.kcql=...")
    first = api.open_restore(configs[0], options, **spark(args))
    interrupts = Interrupts(first.engine)
    done: list[api.Restore] = []
    with interrupts as stop:
        for config in configs:
            if stop.is_set():
                break
            job = first if config is configs[0] else api.open_restore(config, options, engine=first.engine)
            print(f"# {label(config)}")
            if args.dry_run:
                code = dry_run(job, args.consumer_groups)
                if code:
                    return code
                continue
            done.append(job)
            try:
                code = _report(job, job.run(), args.consumer_groups if not stop.is_set() else None)
                if code:
                    return code
            except Exception:
                if interrupts.signum is None:
                    raise
    if interrupts.signum is not None:
        return stopped(interrupts, done)
    return 0


def label(config: Config) -> str:
    from kafka_s3.core.peers import statement

    return statement(config) or ", ".join(config["topics"])


def dry_run(job: api.Restore, consumer_groups: str | None = None) -> int:
    """Print the plan; exit as the restore would (a backup that is not whole: the same code as the restore's).
    ``consumer_groups``: also the offsets ``--consumer-groups`` would commit."""
    from kafka_s3.cli.render import describe_plan, describe_table_plan

    dry = api.plan_restore(job, consumer_groups=consumer_groups)
    if isinstance(job, api.TableRestore):
        print(describe_table_plan(dry.plan, {tp: work.files for tp, work in job.files.items()}))
    else:
        print(describe_plan(dry.plan))
    if dry.schemas:
        print(dry.schemas)
    if dry.groups is not None:
        print("consumer groups (restore --consumer-groups):")
        for line in dry.groups.lines():
            print(f"  {line}")
    for warning in dry.warnings:
        print(f"warning: {warning}")
    if dry.exit_code == BackupUnfinished.exit_code:
        return stopped_unfinished(dry.unfinished)
    return dry.exit_code


def stopped(interrupts: Interrupts, restores: Sequence[api.Restore]) -> int:
    """The one line a restore stopped by a signal prints, and its exit code."""
    print(
        f"kafka-s3: stopped by {interrupts.name}: {sum(r.restored_records for r in restores)} records restored by "
        "finished jobs; the running job was abandoned: progress is committed only for records already in the "
        "target (run the same command to resume)",
        file=sys.stderr,
    )
    return interrupts.exit_code


def stopped_unfinished(findings: Sequence[object], groups: bool = False) -> int:
    """A restore that stopped before a chunk the backup has not finished uploading: what it holds back, and exit 8
    (nothing after such a chunk was produced; running the same command again continues from it)."""
    lines = "".join(f"\n  {f}" for f in findings)
    print(
        f"kafka-s3: error: stopped at a chunk the backup has not finished uploading; run again once it is there:"
        f"{lines}"
        + ("\nconsumer groups were not translated (they are, once the restore is complete)" if groups else ""),
        file=sys.stderr,
    )
    return BackupUnfinished.exit_code
