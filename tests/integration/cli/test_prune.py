"""Issue 29, items 1 and 2 as a user sees them: ``kafka-s3 prune`` (plan, execute, live refusal, a crash in the
middle), what verify, read and restore say after it, and an S3 lifecycle rule told apart from a prune. The real
command in a subprocess (the backups and restores on the shared Spark session) against the real Kafka and S3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kafka_s3.core.errors import BackupIncomplete, BackupLive, ConfigError
from tests.support.integration import list_keys, run_cli, write_properties
from tests.support.restore import fidelity, read_topic, records

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 12
# flush.size=3: four chunks a partition (offsets 0..2, 3..5, 6..8, 9..11); record i was written at BASE + i s
BACKUP = {"format.class": "json", "store.envelope": "true", "flush.size": "3", "cycle.interval.ms": "0"}
BASE = 1_700_000_000_000
BEFORE_OFFSET_6 = str(BASE + 6_000)  # records 0..5 are older: two chunks of each partition


@pytest.fixture
def backed_up(make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path):
    """A stopped backup of 2 × 12 records in chunks of 3, and its configuration file: (topic, path)."""
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    backup(fresh_bucket, topic, BACKUP)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in BACKUP.items()})
    return topic, str(write_properties(tmp_path / "backup.properties", raw))


def prune(path: str, *flags: str):
    return run_cli(["prune", "--config", path, *flags], timeout=120)


@pytest.mark.issue(29, item=1)
def test_prune_plans_by_default_and_removes_nothing(backed_up, fresh_bucket, s3_client):
    topic, path = backed_up
    before = list_keys(s3_client, fresh_bucket)
    result = prune(path, "--before", BEFORE_OFFSET_6)
    assert result.returncode == 0, result.stderr[-3000:]
    out = " ".join(result.stdout.split())
    assert f"│ {topic} │ 0 │ 2 │ 0..5 │ 6 │" in out and f"│ {topic} │ 1 │ 2 │ 0..5 │ 6 │" in out, result.stdout
    assert "would remove 4 chunk(s) of 2 partition(s): 12 records" in out
    assert "nothing was removed: run with --execute to remove them" in out
    assert list_keys(s3_client, fresh_bucket) == before


@pytest.mark.issue(29, item=1)
def test_prune_execute_leaves_a_whole_backup_that_restores_exactly_from_the_new_start(
    backed_up, fresh_bucket, fresh_topic, restorer, kafka_bootstrap, s3_client
):
    topic, path = backed_up
    result = prune(path, "--before", BEFORE_OFFSET_6, "--execute")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "removed 4 chunk(s) of 2 partition(s): 12 records" in " ".join(result.stdout.split())
    keys = list_keys(s3_client, fresh_bucket)
    assert not [k for k in keys if "+0000000000." in k or "+0000000003." in k], keys  # data objects gone
    assert [k.rsplit("/", 1)[-1] for k in keys if k.endswith(".pruned")] == ["00000000000000000006.pruned"] * 2

    verified = run_cli(["verify", "--config", path], timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr[-3000:]
    text = " ".join(verified.stdout.split())
    assert f"note: {topic}[0] offsets ..5: pruned: pruned up to offset 5 at " in text
    assert "by kafka-s3 prune: the backup starts at offset 6" in text and "the backup is whole" in text

    target = fresh_topic(PARTITIONS)
    restorer(fresh_bucket, topic, {**BACKUP, "topic.rename": f"{topic}:{target}"}).run()
    restored = read_topic(kafka_bootstrap, target)
    expected = read_topic(kafka_bootstrap, topic)
    for partition in range(PARTITIONS):
        assert fidelity(restored[partition]) == fidelity(expected[partition][6:])


@pytest.mark.issue(29, item=1)
def test_a_bound_before_the_pruned_start_names_the_first_restorable_offset_and_time(backed_up):
    topic, path = backed_up
    assert prune(path, "--before", BEFORE_OFFSET_6, "--execute").returncode == 0
    read = run_cli(["read", "--config", path, "-o", "0:2"], timeout=120)
    assert read.returncode == ConfigError.exit_code, read.stderr[-3000:]
    assert (
        f"--offset 2: offset 2 of {topic}[0] was pruned (pruned up to offset 5 at " in read.stderr
        and "the first restorable offset is 6 (2023-11-14T22:13:26Z)" in read.stderr
    ), read.stderr
    restore = run_cli(["restore", "--config", path, "--dry-run", "--from-timestamp", str(BASE)], timeout=120)
    assert restore.returncode == ConfigError.exit_code, restore.stderr[-3000:]
    assert "--from-timestamp 2023-11-14T22:13:20Z" in restore.stderr
    assert "records before 2023-11-14T22:13:26Z were pruned" in restore.stderr
    beginning = run_cli(["read", "--config", path, "-p", "1", "--count", "1", "--json"], timeout=120)
    assert beginning.returncode == 0 and '"offset": 6' in beginning.stdout, beginning.stdout + beginning.stderr


@pytest.mark.issue(29, item=1)
def test_prune_refuses_a_live_backup_unless_forced(make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path):
    topic = fresh_topic(1)
    produce(topic, records(1, 9))
    live = {**BACKUP, "cycle.interval.ms": "10000"}  # a commit within 30 s looks live
    backup(fresh_bucket, topic, live)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in live.items()})
    path = str(write_properties(tmp_path / "live.properties", raw))
    refused = prune(path, "--older-than", "0", "--execute")
    assert refused.returncode == BackupLive.exit_code, refused.stderr[-3000:]
    assert f"backup 'it-{fresh_bucket}' looks live: group connect-it-{fresh_bucket} committed {topic}[0]" in (
        refused.stderr
    )
    assert "nothing was removed" in refused.stderr and "--force" in refused.stderr
    forced = prune(path, "--older-than", "0", "--execute", "--force")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert "removed 2 chunk(s) of 1 partition(s): 6 records" in " ".join(forced.stdout.split())


@pytest.mark.issue(29, item=2)
def test_oldest_objects_deleted_without_a_prune_are_named_a_lifecycle_rule(backed_up, fresh_bucket, s3_client):
    """What an age-based lifecycle rule on the prefix does: the oldest objects go, manifests and marks with them."""
    topic, path = backed_up
    oldest = [
        k
        for k in list_keys(s3_client, fresh_bucket)
        if f"/{topic}+0+0000000000." in k
        or k.endswith(("/0/00000000000000000000.chunk", "/0/00000000000000000000.tail"))
    ]
    assert len(oldest) >= 2, oldest
    s3_client.delete_objects(Bucket=fresh_bucket, Delete={"Objects": [{"Key": k} for k in oldest]})
    result = run_cli(["verify", "--config", path], timeout=120)
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-3000:]
    text = " ".join(result.stdout.split())
    assert f"PROBLEM: {topic}[0] offsets ..2: missing:" in text, text
    assert "the oldest objects of the partition vanished without a recorded prune (an S3 lifecycle rule" in text
    assert "Remove old records with kafka-s3 prune instead" in text


@pytest.mark.issue(29, item=1)
def test_backup_retention_bytes_prunes_at_the_end_of_each_cycle(backed_up, fresh_bucket, produce, backup):
    """A running backup's own retention: the cycle that backs up new records prunes what the limit leaves over."""
    topic, path = backed_up
    produce(topic, records(PARTITIONS, 3, base_ts=BASE + PER_PARTITION * 1000))  # one more chunk each
    backup(fresh_bucket, topic, {**BACKUP, "backup.retention.bytes": "1"})  # only the newest chunk stays
    verified = run_cli(["verify", "--config", path], timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr[-3000:]
    text = " ".join(verified.stdout.split())
    for partition in range(PARTITIONS):
        assert f"note: {topic}[{partition}] offsets ..11: pruned: pruned up to offset 11 at " in text, text
    assert "the backup is whole" in text


@pytest.mark.issue(29, item=1)
def test_snapshots_older_than_the_one_the_new_start_needs_are_pruned_with_the_records(
    backed_up, fresh_bucket, make_config
):
    """Topic-config records before the first kept record go, but the one a restore from the new start picks (the
    newest at or before it) stays, and so does the newest."""
    from kafka_s3.core.manifest import ManifestStore
    from kafka_s3.core.topic_config import SERIES, TopicConfig
    from kafka_s3.io.stores.spec import StoreSpec

    topic, path = backed_up
    store = StoreSpec.from_config(make_config(fresh_bucket, topic)[1]).open()
    manifests = ManifestStore(store, "topics/_kafka-s3/json")
    for at in (BASE - 10_000, BASE + 2_000, BASE + 9_000):  # the first kept record is BASE + 6 s
        manifests.note(SERIES, TopicConfig(topic, at, PARTITIONS, {"retention.ms": str(at)}))
    newest = manifests.times(SERIES, topic)[-1]  # the backup's own, taken now
    assert prune(path, "--before", BEFORE_OFFSET_6, "--execute").returncode == 0
    assert manifests.times(SERIES, topic) == [BASE + 2_000, BASE + 9_000, newest]


@pytest.mark.issue(29, item=1)
def test_status_shows_each_partitions_first_restorable_offset_and_time_after_a_prune(backed_up):
    """The backup's new start is where a restore begins: status says it per partition (--json here; the table's
    column is tests/unit/cli/test_render_status.py's)."""
    topic, path = backed_up
    assert prune(path, "--before", BEFORE_OFFSET_6, "--execute").returncode == 0
    status = run_cli(["status", "--config", path, "--json"], timeout=120)
    assert status.returncode == 0, status.stderr[-3000:]
    rows = {row["partition"]: row for row in json.loads(status.stdout)}
    for partition in range(PARTITIONS):
        assert rows[partition]["pruned_start"] == 6, rows[partition]
        assert rows[partition]["pruned_start_time"] == "2023-11-14T22:13:26Z", rows[partition]


@pytest.mark.issue(29, item=1)
def test_a_group_committed_below_the_pruned_start_resumes_at_the_restores_first_record_with_a_warning(
    make_config, fresh_bucket, fresh_topic, produce, backup, restorer, kafka_bootstrap, tmp_path, caplog
):
    """Partition 0's group offset (2) was pruned: it is translated to the restore's first record (source offset 6),
    said in a warning and in groups' translation; partition 1's (9) translates as before."""
    from kafka_s3.io.kafka.admin import Admin

    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    group = f"app-{fresh_bucket}"
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(group, {(topic, 0): 2, (topic, 1): 9})
    backup(fresh_bucket, topic, BACKUP)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in BACKUP.items()})
    path = str(write_properties(tmp_path / "backup.properties", raw))
    assert prune(path, "--before", BEFORE_OFFSET_6, "--execute").returncode == 0
    target = fresh_topic(PARTITIONS)
    rename = {**BACKUP, "topic.rename": f"{topic}:{target}"}
    restore = restorer(fresh_bucket, topic, rename)
    restore.run()
    with caplog.at_level("WARNING", logger="kafka_s3.restore"):
        plan = restore.translate_groups()
    mine = {t.source_partition: t for t in plan.translations if t.group == group}
    assert (mine[0].target_offset, mine[0].pruned_start) == (0, 6), mine[0]
    assert (mine[1].target_offset, mine[1].pruned_start) == (3, None), mine[1]
    said = [r.getMessage() for r in caplog.records]
    assert any(
        f"group {group}: {topic}[0] offset 2 was pruned (pruned up to offset 5 at " in m
        and "translated to the restore's first record, source offset 6" in m
        for m in said
    ), said

    restore_file = write_properties(tmp_path / "restore.properties", {**raw, "topic.rename": f"{topic}:{target}"})
    groups = run_cli(["groups", "--config", str(restore_file), "--consumer-groups", group], timeout=120)
    assert groups.returncode == 0, groups.stderr[-3000:]
    assert (
        f"group {group}: {topic}[0] 2 -> {target}[0] 0 (offset 2 was pruned: the backup starts at offset 6)"
        in groups.stdout
    ), groups.stdout


@pytest.mark.issue(29, item=1)
def test_backup_follow_with_retention_prunes_old_chunks_while_it_keeps_running(
    make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path
):
    """A real ``backup --follow`` with ``backup.retention.bytes=1``: each cycle prunes all but the newest committed
    chunk, the pruned-range record moves up as records arrive, verify stays whole meanwhile, and SIGTERM stops it
    (exit 143)."""
    topic = fresh_topic(1)
    produce(topic, records(1, 9))  # chunks 0..2, 3..5, 6..8: the first cycle keeps 6..8
    settings = {**BACKUP, "cycle.interval.ms": "500", "backup.retention.bytes": "1"}
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in settings.items()})
    path = str(write_properties(tmp_path / "follow.properties", raw))
    output = tmp_path / "follow.log"
    with output.open("w") as out:
        follow = subprocess.Popen(
            [sys.executable, "-m", "kafka_s3.cli", "backup", "--follow", "--no-progress", "-c", path],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
    try:

        def pruned_to(start: int) -> bool:
            """The bucket holds only the chunks from ``start`` on, and its start record (a superseded one removed)."""
            assert follow.poll() is None, output.read_text()[-3000:]
            keys = list_keys(s3_client, fresh_bucket)
            data = sorted(k.rsplit("+", 1)[-1] for k in keys if f"/{topic}+0+" in k)
            records_held = [k.rsplit("/", 1)[-1] for k in keys if k.endswith(".pruned")]
            return records_held == [f"{start:020d}.pruned"] and data[:1] == [f"{start:010d}.json"]

        def wait_for(start: int) -> None:
            deadline = time.monotonic() + 180  # Spark's start on a loaded machine; about 15 s on an idle one
            while not pruned_to(start):
                assert time.monotonic() < deadline, sorted(list_keys(s3_client, fresh_bucket))
                time.sleep(0.3)

        wait_for(6)
        produce(topic, records(1, 6, base_ts=BASE + 9_000))  # offsets 9..14: chunks 9..11 and 12..14 arrive
        wait_for(12)
        verified = run_cli(["verify", "--config", path], timeout=120)
        assert verified.returncode == 0, verified.stdout + verified.stderr[-3000:]
        text = " ".join(verified.stdout.split())
        assert f"note: {topic}[0] offsets ..11: pruned: pruned up to offset 11 at " in text, text
        assert "the backup is whole" in text, text
        assert follow.poll() is None, output.read_text()[-3000:]
    finally:
        follow.send_signal(signal.SIGTERM)
        code = follow.wait(timeout=120)
    assert code == 143, output.read_text()[-3000:]


@pytest.mark.issue(29, item=1)
def test_a_restore_whose_planned_objects_a_prune_removed_says_so_and_a_new_run_starts_at_the_new_start(
    backed_up, fresh_bucket, fresh_topic, restorer, kafka_bootstrap
):
    """A prune between a restore's plan and its reads: the error names the prune and the new start (it said only
    'no such object'); planned again (a new run, or the next cycle of restore --follow), it restores from there."""
    from kafka_s3.core.errors import PrunedWhileRestoring

    topic, path = backed_up
    target = fresh_topic(PARTITIONS)
    restore = restorer(fresh_bucket, topic, {**BACKUP, "topic.rename": f"{topic}:{target}"})
    planned = restore.plan()
    assert prune(path, "--before", BEFORE_OFFSET_6, "--execute").returncode == 0
    with pytest.raises(PrunedWhileRestoring) as raised:
        restore.run(planned)
    said = str(raised.value)
    assert f"{topic}+" in said and ": no such object: kafka-s3 prune removed it after this restore planned it: " in said
    assert "pruned up to offset 5 at " in said and "the backup now starts at offset 6" in said, said
    restore.run()
    restored, expected = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    for partition in range(PARTITIONS):
        assert fidelity(restored[partition]) == fidelity(expected[partition][6:])
