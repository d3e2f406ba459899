"""kill -9 ``kafka-s3 prune --execute`` at random moments: the backup verifies whole right after the kill (at most
orphans below a recorded start), a rerun finishes the prune, and the bucket then holds exactly what a clean prune
leaves (the backup's keys without the chunks below the new start, with the pruned-range records), restoring exactly
from the new start.

The prune reaches S3 through a fault proxy that holds each write (records, deletions) for a moment, so that a prune of
a few chunks lasts seconds and the kills land among its steps. ``KAFKA_S3_CHAOS_TRIALS`` trials (``make chaos``: 20),
half of them aimed at the deletions (a random time after the first pruned-range record was written); without it, one
trial killed 0.2 s after that record (writes held a third as long): the quick variant of the normal suite.
"""

from __future__ import annotations

import os
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

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.issue(29, item=1)]

PARTITIONS, PER_PARTITION = 4, 40
BASE = 1_700_000_000_000
NEW_START = 30
CUTOFF = BASE + NEW_START * 1000  # records 0..29 of each partition are older: 15 of its 20 chunks go
HELD = 0.15  # seconds the proxy holds each write of the prune


def settings(bucket: str, topic: str, s3_env, bootstrap: str) -> dict[str, str]:
    return {
        "name": f"prune-crash-{bucket}",
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
        "cycle.interval.ms": "0",  # a stopped backup: never taken for live
    }


def start_of(key: str) -> int | None:
    """The first offset of a chunk's object, manifest or mark (``None``: any other key)."""
    name = key.rsplit("/", 1)[-1]
    if name.endswith((".chunk", ".tail")):
        return int(name.split(".")[0])
    if name.endswith(".json") and "/partition=" in key:
        return int(name.split(".")[0].rsplit("+", 1)[-1])
    return None


def what_a_clean_prune_leaves(keys: list[str]) -> set[str]:
    """The backup's keys without its chunks below offset 30, with each partition's pruned-range record."""
    kept = {k for k in keys if (start_of(k) is None or start_of(k) >= NEW_START)}
    return kept | {
        k.rsplit("/", 1)[0] + f"/{NEW_START:020d}.pruned" for k in keys if k.endswith(f"/{NEW_START:020d}.chunk")
    }


def test_prune_survives_kill_9(
    engine, fresh_topic, new_bucket, s3_env, kafka_bootstrap, s3_client, tmp_path: Path, chaos_random
):
    topic = fresh_topic(PARTITIONS)
    produce_records(kafka_bootstrap, topic, records(PARTITIONS, PER_PARTITION))
    env = {**os.environ}
    trials = int(os.environ.get("KAFKA_S3_CHAOS_TRIALS", "0")) or 1

    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        held = HELD if trials > 1 else HELD / 3  # the quick variant: a shorter run, killed among the same steps
        for method in ("PUT", "POST"):  # records and batch deletions
            proxy.delay(held, 1_000_000, method=method)

        def backed_up(bucket: str) -> tuple[str, dict[str, str]]:
            """Back a bucket up (straight to S3); the prune's configuration file reaches S3 through the proxy."""
            raw = settings(new_bucket(bucket), topic, s3_env, kafka_bootstrap)
            Backup(SINK.parse(raw), engine=engine).run_once()
            path = tmp_path / f"{bucket}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in {**raw, "store.url": proxy.url}.items()))
            return str(path), raw

        prune = ["prune", "--before", str(CUTOFF), "--execute", "--config"]
        writes = PARTITIONS * 5 * held  # a record and four batches of deletions per partition, each held
        for trial in range(trials):
            bucket = f"prune-crash-{trial}-{chaos_random.getrandbits(32):08x}"
            path, raw = backed_up(bucket)
            expected = what_a_clean_prune_leaves(list_keys(s3_client, bucket))
            seen = len(proxy.requests(method="PUT", path=r"\.pruned$"))
            log = tmp_path / f"trial-{trial}.log"

            def recorded(seen: int = seen) -> bool:
                return len(proxy.requests(method="PUT", path=r"\.pruned$")) > seen

            if trials == 1 or trial % 2:  # aimed: the first record is written, deletions under way
                after_work = 0.2 if trials == 1 else chaos_random.uniform(0.0, writes)
                killed = cli([*prune, path], env, log, probe=recorded, kill_after_work=after_work)
                where = f"trial {trial} (bucket {bucket}, killed {after_work:.2f} s after the first record)"
            else:  # anywhere in the run, start-up included
                after = chaos_random.uniform(0.5, 2.0 + writes)
                killed = cli([*prune, path], env, log, kill_after=after)
                where = f"trial {trial} (bucket {bucket}, killed after {after:.2f} s)"
            assert killed.killed or killed.returncode == 0, f"{where}\n{killed.output}"
            assert verify(SOURCE.parse(raw), None).whole, f"{where}: not whole right after the kill\n{killed.output}"

            rerun = cli([*prune, path], env, log)
            assert rerun.returncode == 0, f"{where}: the rerun failed\n{rerun.output}"
            assert verify(SOURCE.parse(raw), None).whole, f"{where}: not whole after the rerun"
            assert set(list_keys(s3_client, bucket)) == expected, where
            print(f"{where}: killed={killed.killed}, whole after the kill and after the rerun")

    target = fresh_topic(PARTITIONS)
    Restore(SOURCE.parse({**raw, "topic.rename": f"{topic}:{target}"}), engine, RestoreOptions()).run()
    restored, source_rows = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    for partition in range(PARTITIONS):
        assert fidelity(restored[partition]) == fidelity(source_rows[partition][NEW_START:]), partition
