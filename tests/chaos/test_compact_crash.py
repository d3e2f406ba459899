"""kill -9 ``kafka-s3 compact`` at random moments: the backup verifies whole right after the kill (the originals, or
the recorded merge's staged chunk, never both and never neither), a rerun finishes the compaction, and the bucket then
holds exactly what a clean compaction leaves (the merged objects under their names, no staged file, no record),
restoring exactly.

The compaction reaches S3 through a fault proxy that holds each write (staged files, records, copies, deletions) for
a moment, so that the merge of a few groups lasts seconds and the kills land among its steps. ``KAFKA_S3_CHAOS_TRIALS``
trials (``make chaos``: 20), half of them aimed at the swap (a random time after the first compaction record was
written); without it, one trial killed 0.3 s after the last record (every merge recorded, the first swaps under way:
the rerun finishes them without a Spark job): the quick variant of the normal suite.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.verify import verify
from tests.chaos.chaos_helpers import cli
from tests.support.faultproxy import FaultProxy
from tests.support.integration import list_keys
from tests.support.restore import fidelity, produce_records, read_topic, records

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.issue(29, item=3)]

PARTITIONS, PER_PARTITION = 2, 40
# flush.size=2: 20 chunks a partition, the newest (38..39) the tail; --target-records 8: groups of 4 chunks
MERGED_STARTS = (0, 8, 16, 24, 32, 38)  # the objects a clean compaction leaves per partition (32..37: 3 chunks)
GROUPS = PARTITIONS * 5  # merges recorded (one compaction record each)
HELD = 0.1  # seconds the proxy holds each write of the compaction


def settings(bucket: str, topic: str, s3_env, bootstrap: str) -> dict[str, str]:
    return {
        "name": f"compact-crash-{bucket}",
        "topics": topic,
        "flush.size": "2",
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
        "bootstrap.servers": bootstrap,
        "format.class": "json",
        "store.envelope": "true",
        "cycle.interval.ms": "0",
    }


def data_objects(keys: list[str]) -> set[str]:
    return {k for k in keys if "/partition=" in k and "_kafka-s3" not in k}


def what_a_clean_compaction_leaves(topic: str) -> set[str]:
    return {
        f"topics/{topic}/partition={p}/{topic}+{p}+{start:010d}.json"
        for p in range(PARTITIONS)
        for start in MERGED_STARTS
    }


def test_compact_survives_kill_9(
    engine, fresh_topic, new_bucket, s3_env, kafka_bootstrap, s3_client, tmp_path: Path, chaos_random
):
    topic = fresh_topic(PARTITIONS)
    produce_records(kafka_bootstrap, topic, records(PARTITIONS, PER_PARTITION))
    env = {**os.environ}
    trials = int(os.environ.get("KAFKA_S3_CHAOS_TRIALS", "0")) or 1

    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        for method in ("PUT", "POST", "DELETE"):  # staged files, records, copies, manifests; batch deletions
            proxy.delay(HELD, 1_000_000, method=method)

        def backed_up(bucket: str) -> tuple[str, dict[str, str]]:
            """Back a bucket up (straight to S3); the compaction's configuration file reaches S3 through the proxy."""
            raw = settings(new_bucket(bucket), topic, s3_env, kafka_bootstrap)
            Backup(SINK.parse(raw), engine=engine).run_once()
            path = tmp_path / f"{bucket}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in {**raw, "store.url": proxy.url}.items()))
            return str(path), raw

        compact = ["compact", "--target-records", "8", "--config"]
        swap = PARTITIONS * 5 * 12 * HELD  # per group: a record, deletions, copies, a manifest, marks, each held
        for trial in range(trials):
            bucket = f"compact-crash-{trial}-{chaos_random.getrandbits(32):08x}"
            path, raw = backed_up(bucket)
            expected = what_a_clean_compaction_leaves(topic)
            seen = len(proxy.requests(method="PUT", path=r"\.compacting$"))
            log = tmp_path / f"trial-{trial}.log"

            def recorded(seen: int = seen, count: int = 1) -> bool:
                return len(proxy.requests(method="PUT", path=r"\.compacting$")) >= seen + count

            if trials == 1:  # the quick variant: every merge recorded, the first swaps under way (no Spark to rerun)
                probe = partial(recorded, count=GROUPS)
                killed = cli([*compact, path], env, log, probe=probe, kill_after_work=0.3)
                where = f"trial {trial} (bucket {bucket}, killed 0.30 s after the last record)"
            elif trial % 2:  # aimed: a merge is recorded, the swap under way
                after_work = chaos_random.uniform(0.0, swap)
                killed = cli([*compact, path], env, log, probe=recorded, kill_after_work=after_work)
                where = f"trial {trial} (bucket {bucket}, killed {after_work:.2f} s after the first record)"
            else:  # anywhere in the run, Spark's start and the staging job included
                after = chaos_random.uniform(5.0, 30.0 + swap)
                killed = cli([*compact, path], env, log, kill_after=after)
                where = f"trial {trial} (bucket {bucket}, killed after {after:.2f} s)"
            assert killed.killed or killed.returncode == 0, f"{where}\n{killed.output}"
            after_kill = verify(SOURCE.parse(raw), None)
            assert after_kill.whole, f"{where}: not whole right after the kill: {after_kill.problems}\n{killed.output}"

            rerun = cli([*compact, path], env, log)
            assert rerun.returncode == 0, f"{where}: the rerun failed\n{rerun.output}"
            assert verify(SOURCE.parse(raw), None).whole, f"{where}: not whole after the rerun"
            keys = list_keys(s3_client, bucket)
            assert data_objects(keys) == expected, where
            assert not [k for k in keys if "_compacting" in k or k.endswith(".compacting")], where
            print(f"{where}: killed={killed.killed}, whole after the kill and after the rerun")

    target = fresh_topic(PARTITIONS)
    Restore(SOURCE.parse({**raw, "topic.rename": f"{topic}:{target}"}), engine, RestoreOptions()).run()
    restored, source_rows = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    for partition in range(PARTITIONS):
        assert fidelity(restored[partition]) == fidelity(source_rows[partition]), partition
