"""Issue 14 item 7: a sidecar whose record count differs from its data object's is found before any record of that
object is produced — not after producing them (and committing them with the restore's progress)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import RestoreFailed
from tests.support.restore import as_another_tools_bucket, get_object, read_topic, records, restore_progress

pytestmark = pytest.mark.integration

SIDECARS = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "store.kafka.keys": "true",
    "keys.format.class": "json",
    "key.converter": "bytearray",
}


def test_a_sidecar_with_an_extra_record_stops_before_its_object_is_produced(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    source, target = fresh_topic(1), fresh_topic(1)
    produce(source, records(1, 9))
    backup(fresh_bucket, source, SIDECARS)
    as_another_tools_bucket(s3_client, fresh_bucket)  # as another tool's bucket: no counts from manifests
    keys = f"topics/{source}/partition=0/{source}+0+0000000003.keys.json"
    body = get_object(s3_client, fresh_bucket, keys)
    s3_client.put_object(Bucket=fresh_bucket, Key=keys, Body=body + body.split(b"\n")[0] + b"\n")

    restore = restorer(fresh_bucket, source, {**SIDECARS, "topic.rename": f"{source}:{target}"})
    with pytest.raises(RestoreFailed) as failure:
        restore.run()
    restored = read_topic(kafka_bootstrap, target)[0]
    assert len(restored) == 3  # the object before it, and nothing of the mismatched one
    assert restore_progress(kafka_bootstrap, restore.config, source, target)[0] == 3
    assert "sidecar has 4 records but its data object" in str(failure.value) and keys in str(failure.value)


def test_an_object_holding_other_than_its_manifests_record_count_stops_the_restore_naming_it(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """A manifest edited to a wrong record count (fewer than its offsets hold: no listing check can tell) disagrees
    with its object once that is read: the restore stops there, naming both counts, instead of trusting either."""
    import json

    from kafka_s3.core.errors import BackupIncomplete

    source, target = fresh_topic(1), fresh_topic(1)
    produce(source, records(1, 9))
    backup(fresh_bucket, source, {"store.envelope": "true", "flush.size": 3})
    key = f"topics/_kafka-s3/json/{source}/0/{3:020d}.chunk"
    manifest = json.loads(get_object(s3_client, fresh_bucket, key))
    manifest["files"][0]["records"] = 2  # offsets 3..5 hold 3
    s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=json.dumps(manifest).encode())

    restore = restorer(fresh_bucket, source, {"store.envelope": "true", "topic.rename": f"{source}:{target}"})
    with pytest.raises(BackupIncomplete, match=r"holds 3 records, its chunk manifest says 2") as failure:
        restore.run()
    assert f"{source}+0+0000000003.json" in str(failure.value)
    assert len(read_topic(kafka_bootstrap, target)[0]) <= 3  # nothing of that object or after it committed
