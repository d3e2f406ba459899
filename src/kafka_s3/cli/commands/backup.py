"""``kafka-s3 backup``: once (``--once``) or following, with progress bars and a clean stop on a signal."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, spark
from kafka_s3.cli.signals import Interrupts

log = logging.getLogger("kafka_s3.cli")


def cmd_backup(args: argparse.Namespace) -> int:
    job = api.open_backup(args.config, overrides=overrides(args), **spark(args))
    interrupts = Interrupts(job.engine)
    with interrupts as stop:
        try:
            if isinstance(job, api.TableBackups):
                _tables(job, args.once, stop)
            elif isinstance(job, api.BackupGroup):
                _statements(job, args.once, stop)
            elif args.once:
                from kafka_s3.cli.progress import BackupProgress

                with BackupProgress(job, enabled=not args.no_progress) as progress:
                    summary = job.run_once()
                if interrupts.signum is None:
                    progress.print_summary(summary)
            else:
                log.info("following %s; Ctrl-C stops (abandoning the running cycle)", ", ".join(sorted(job.topics())))
                job.follow(stop)
        except Exception:
            if interrupts.signum is None:
                raise
    if interrupts.signum is not None:
        if isinstance(job, api.TableBackups):
            return stopped(interrupts, [job])
        return stopped(interrupts, job.backups if isinstance(job, api.BackupGroup) else [job])
    return 0


def _tables(job: api.TableBackups, once: bool, stop: object) -> None:
    """Apache Iceberg's sink configuration: the records into its tables, one snapshot per table and cycle."""
    from kafka_s3.cli.render import print_tables_summary

    if once:
        print_tables_summary(job.run_once())
        return
    log.info(
        "following %s into Iceberg table(s) %s; Ctrl-C stops (abandoning the running cycle)",
        ", ".join(sorted(job.topics())),
        ", ".join(b.table.identifier for b in job.backups),
    )
    job.follow(stop)  # type: ignore[arg-type]


def _statements(group: api.BackupGroup, once: bool, stop: object) -> None:
    """Several KCQL statements: one backup per statement, all in this process and Spark session."""
    from kafka_s3.cli.render import print_backup_summary

    if once:
        print_backup_summary(group.run_once())
        return
    log.info(
        "following %s (%d KCQL statements); Ctrl-C stops (abandoning the running cycles)",
        ", ".join(sorted(group.topics())),
        len(group.backups),
    )
    group.follow(stop)  # type: ignore[arg-type]


def stopped(interrupts: Interrupts, backups: Sequence[api.Backup | api.TableBackups]) -> int:
    """The one line a backup stopped by a signal prints (what its finished cycles committed), and its exit code."""
    cycles = [report for backup in backups for report in backup.finished]
    tables = any(isinstance(backup, api.TableBackups) for backup in backups)
    abandoned = (
        "its snapshot was not committed (data files it already wrote are in no snapshot: orphans for prune; run again "
        "to continue from the table)"
        if tables
        else "its group offsets were not committed (objects it already stored are kept, and the next run finds them "
        "instead of writing them again: run again to continue)"
    )
    print(
        f"kafka-s3: stopped by {interrupts.name}: committed {sum(c.records for c in cycles)} records in "
        f"{sum(c.objects for c in cycles)} {'data files' if tables else 'objects'} "
        f"({sum(c.bytes for c in cycles) / 1e6:.1f} MB) in {len(cycles)} cycles; the running cycle was abandoned: "
        f"{abandoned}",
        file=sys.stderr,
    )
    return interrupts.exit_code
