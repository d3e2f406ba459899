"""What ``verify`` says, and what a restore does, when the bucket is not the whole backup (issue 26, findings 4 and 6).

A kafka-s3 backup is recognisable from its data objects alone (each carries the key of its chunk manifest in its
object metadata), so a copy of the bucket that lost the manifests is "missing", never another tool's bucket read
unverified. A bucket another tool wrote is verified as far as names allow, and the verdict says what that cannot
see. A bucket that holds nothing of the configured topics is "nothing backed up". And the backup's own consumer
group, where the cluster has it, is compared with the bucket: chunks it committed that the bucket lacks are found
even when their manifests and committed-end marks went with them.
"""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import BackupIncomplete
from tests.support.integration import list_keys
from tests.support.restore import read_topic, records, run_cli, write_properties

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 600
EXACT = {"store.envelope": "true", "flush.size": 100}


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    assert backup(fresh_bucket, topic, EXACT).records == PARTITIONS * PER_PARTITION
    return topic


@pytest.fixture
def cli_config(make_config, fresh_bucket, tmp_path):
    def write(topic: str, **more: str):
        raw, _ = make_config(
            fresh_bucket, topic, source=True, **{"store__envelope": "true", "flush__size": 100, **more}
        )
        return str(write_properties(tmp_path / "verify.properties", raw))

    return write


def data_key(topic: str, partition: int, start: int) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json"


def test_a_backup_whose_manifests_are_all_gone_is_missing_not_a_foreign_bucket(
    backed_up, fresh_bucket, s3_client, cli_config, restorer, fresh_topic, kafka_bootstrap
):
    # An interrupted copy of the bucket: a topic name in upper case sorts before _kafka-s3/, so no manifest came
    # over; and the copy stopped before partition 2's last object.
    for key in list_keys(s3_client, fresh_bucket, "topics/_kafka-s3/"):
        s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    s3_client.delete_object(Bucket=fresh_bucket, Key=data_key(backed_up, 2, 500))
    result = run_cli(["verify", "-c", cli_config(backed_up)])
    assert result.returncode == 7, result.stdout + result.stderr[-2000:]
    assert f"{backed_up}[2] offsets unknown: missing: objects of a kafka-s3 backup" in result.stdout.replace("\n", " ")
    assert "the backup is whole" not in result.stdout
    target = fresh_topic(PARTITIONS)
    with pytest.raises(BackupIncomplete, match="chunk manifest"):
        restorer(fresh_bucket, backed_up, {**EXACT, "topic.rename": f"{backed_up}:{target}"}).run()
    assert sum(len(rows) for rows in read_topic(kafka_bootstrap, target).values()) == 0


def test_one_partition_without_manifests_in_a_backup_that_has_them_is_missing(
    backed_up, fresh_bucket, s3_client, cli_config
):
    for key in list_keys(s3_client, fresh_bucket, f"topics/_kafka-s3/json/{backed_up}/1/"):
        s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    result = run_cli(["verify", "-c", cli_config(backed_up), "--json"])
    assert result.returncode == 7, result.stderr[-2000:]
    report = json.loads(result.stdout)
    problems = {p["partition"]: [f["kind"] for f in p["problems"]] for p in report["partitions"]}
    assert problems == {0: [], 1: ["missing"], 2: []}


def test_verify_of_another_tools_bucket_says_what_it_cannot_check(fresh_bucket, fresh_topic, s3_client, cli_config):
    topic = fresh_topic(1)
    for start in (0, 3):  # objects named as Confluent's sink names them, no kafka-s3 manifest or metadata
        lines = b"".join(json.dumps({"n": n}).encode() + b"\n" for n in range(start, start + 3))
        s3_client.put_object(Bucket=fresh_bucket, Key=data_key(topic, 0, start), Body=lines)
    result = run_cli(["verify", "-c", cli_config(topic, store__envelope="false")])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the backup is whole" not in result.stdout
    assert "a missing newest object" in result.stdout.replace("\n", " ")


def test_verify_of_a_bucket_holding_nothing_of_the_topic_says_nothing_was_backed_up(fresh_topic, s3_client, cli_config):
    topic = fresh_topic(1)
    result = run_cli(["verify", "-c", cli_config(topic)])
    assert result.returncode == 7, result.stdout + result.stderr[-2000:]
    assert f"nothing backed up: no object and no manifest of {topic}" in result.stdout.replace("\n", " ")
    assert "the backup is whole" not in result.stdout


def test_the_backups_consumer_group_finds_a_tail_deleted_with_its_manifest_and_mark(
    backed_up, fresh_bucket, s3_client, cli_config, restorer, fresh_topic, kafka_bootstrap
):
    # The last chunk of partition 0 deleted together with its manifest and its committed-end mark.
    s3_client.delete_object(Bucket=fresh_bucket, Key=data_key(backed_up, 0, 500))
    for suffix in (".chunk", ".tail"):
        s3_client.delete_object(Bucket=fresh_bucket, Key=f"topics/_kafka-s3/json/{backed_up}/0/{500:020d}{suffix}")
    s3_client.put_object(Bucket=fresh_bucket, Key=f"topics/_kafka-s3/json/{backed_up}/0/{400:020d}.tail", Body=b"")
    result = run_cli(["verify", "-c", cli_config(backed_up)])
    assert result.returncode == 7, result.stdout + result.stderr[-2000:]
    said = result.stdout.replace("\n", " ")
    assert f"{backed_up}[0] offsets 500..599: missing" in said and f"connect-it-{fresh_bucket}" in said
    target = fresh_topic(PARTITIONS)
    with pytest.raises(BackupIncomplete, match=rf"{backed_up}\[0\] offsets 500\.\.599: missing"):
        restorer(fresh_bucket, backed_up, {**EXACT, "topic.rename": f"{backed_up}:{target}"}).run()
