"""Issue 29, item 3 as a user sees it: ``kafka-s3 compact`` merges a backup's small chunks into fewer objects, and the
backup stays whole and restores exactly; ``--dry-run`` changes nothing; a bucket another tool wrote is refused by
name. The real command in a subprocess (the backups and restores on the shared Spark session) against the real Kafka
and S3."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import PlanError
from tests.support.integration import list_keys, run_cli, write_properties
from tests.support.restore import fidelity, read_topic, records

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 100
# flush.size=10: ten chunks a partition; the newest (90..99) is the backup's tail, never merged
ENVELOPE = {"format.class": "json", "store.envelope": "true", "flush.size": "10", "cycle.interval.ms": "0"}
PLAIN = {
    "format.class": "json",
    "store.envelope": "false",
    "store.kafka.keys": "true",
    "store.kafka.headers": "true",
    "keys.format.class": "json",
    "headers.format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "flush.size": "10",
    "cycle.interval.ms": "0",
}


def backed_up(properties, make_config, bucket, fresh_topic, produce, backup, tmp_path):
    """A stopped backup of 2 × 100 records in chunks of 10, and its configuration file: (topic, path)."""
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    backup(bucket, topic, properties)
    raw, _ = make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})
    return topic, str(write_properties(tmp_path / "backup.properties", raw))


def compact(path: str, *flags: str):
    return run_cli(["compact", "--config", path, *flags], timeout=300)


def data_objects(s3_client, bucket: str, topic: str) -> list[str]:
    return [k for k in list_keys(s3_client, bucket) if f"/{topic}/partition=" in k and "_kafka-s3" not in k]


def restored_exactly(path, topic, bucket, properties, fresh_topic, restorer, kafka_bootstrap) -> None:
    """Verify calls the compacted backup whole, and a restore gives back every record in order: keys, values, headers
    and (envelope: stored) timestamps."""
    verified = run_cli(["verify", "--config", path], timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr[-3000:]
    assert "the backup is whole" in verified.stdout
    target = fresh_topic(PARTITIONS)
    restorer(bucket, topic, {**properties, "topic.rename": f"{topic}:{target}"}).run()
    restored, expected = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    for partition in range(PARTITIONS):
        if properties["store.envelope"] == "true":
            assert fidelity(restored[partition]) == fidelity(expected[partition])
        else:  # plain JSON: values re-serialized by the converter, no record time stored (the restore's own)
            assert plain(restored[partition]) == plain(expected[partition])


def plain(rows: list[dict]) -> list[tuple]:
    return [(r["key"], json.loads(r["value"]), r["headers"]) for r in rows]


@pytest.mark.issue(29, item=3)
def test_compact_dry_run_changes_nothing_then_merges_small_chunks_and_the_backup_restores_exactly(
    make_config, fresh_bucket, fresh_topic, produce, backup, restorer, kafka_bootstrap, s3_client, tmp_path
):
    topic, path = backed_up(ENVELOPE, make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path)
    keys = list_keys(s3_client, fresh_bucket)
    planned = compact(path, "--dry-run", "--target-records", "1000")
    assert planned.returncode == 0, planned.stderr[-3000:]
    said = " ".join(planned.stdout.split())
    assert f"│ {topic} │ 0 │ 0..89 │ 9 │ 90 │ 9 │" in said, planned.stdout
    assert "would merge 18 chunk(s) (18 objects, 180 records) into 2 group(s)" in said
    assert "nothing was changed (--dry-run)" in said and list_keys(s3_client, fresh_bucket) == keys

    before = data_objects(s3_client, fresh_bucket, topic)
    result = compact(path, "--target-records", "50")
    assert result.returncode == 0, result.stderr[-3000:]
    out = " ".join(result.stdout.split())
    assert f"│ {topic} │ 0 │ 0..49 │ 5 │ 50 │" in out and f"│ {topic} │ 1 │ 50..89 │ 4 │ 40 │" in out, result.stdout
    assert "merged 18 chunk(s) (18 objects, 180 records) into 4 group(s): 4 object(s) now" in out
    after = data_objects(s3_client, fresh_bucket, topic)
    assert len(before) == 20 and len(after) == 6, after  # per partition: 0..49, 50..89 and the tail 90..99
    assert sorted(k.rsplit("+", 1)[-1] for k in after) == sorted(
        ["0000000000.json", "0000000050.json", "0000000090.json"] * 2
    )
    assert not [k for k in list_keys(s3_client, fresh_bucket) if "_compacting" in k]
    restored_exactly(path, topic, fresh_bucket, ENVELOPE, fresh_topic, restorer, kafka_bootstrap)
    again = compact(path, "--target-records", "50", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["groups"] == [], again.stdout + again.stderr[-2000:]


@pytest.mark.issue(29, item=3)
def test_compact_merges_plain_json_with_keys_and_headers_sidecars(
    make_config, fresh_bucket, fresh_topic, produce, backup, restorer, kafka_bootstrap, s3_client, tmp_path
):
    topic, path = backed_up(PLAIN, make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path)
    before = data_objects(s3_client, fresh_bucket, topic)
    result = compact(path, "--target-bytes", "10MiB")
    assert result.returncode == 0, result.stderr[-3000:]
    after = data_objects(s3_client, fresh_bucket, topic)
    assert len(before) == 60 and len(after) == 12, after  # data, keys and headers: 0..89 and the tail, per partition
    verified = run_cli(["verify", "--config", path], timeout=120)
    assert verified.returncode == 0 and "the backup is whole" in verified.stdout, verified.stdout + verified.stderr
    read = run_cli(["read", "--config", path, "-p", "0", "--json"], timeout=120)
    rows = [json.loads(line) for line in read.stdout.splitlines()]
    assert [r["offset"] for r in rows] == list(range(PER_PARTITION)), read.stderr[-2000:]
    restored_exactly(path, topic, fresh_bucket, PLAIN, fresh_topic, restorer, kafka_bootstrap)


@pytest.mark.issue(29, item=3)
def test_compact_refuses_a_bucket_without_kafka_s3_manifests_by_name(
    make_config, fresh_bucket, fresh_topic, produce, backup, s3_client, tmp_path
):
    """Confluent's sink writes the same names without kafka-s3's manifests: nothing to merge safely."""
    topic, path = backed_up(ENVELOPE, make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path)
    metadata = [k for k in list_keys(s3_client, fresh_bucket) if "_kafka-s3/" in k]
    s3_client.delete_objects(Bucket=fresh_bucket, Delete={"Objects": [{"Key": k} for k in metadata]})
    before = list_keys(s3_client, fresh_bucket)
    refused = compact(path, "--target-records", "1000")
    assert refused.returncode == PlanError.exit_code, refused.stderr[-3000:]
    assert "no kafka-s3 chunk manifests" in refused.stderr and "Confluent" in refused.stderr, refused.stderr
    assert "nothing was changed" in refused.stderr
    assert list_keys(s3_client, fresh_bucket) == before
