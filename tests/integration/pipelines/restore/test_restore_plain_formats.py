"""Issue 14, item 5: plain formats say what they cannot carry.

Without the envelope, objects keep no record timestamps: the plan and the summary say the restored records get the
time of the restore (and they do). ByteArray objects cannot give back a value holding the separator, or a tombstone,
record by record: the backup warns once per partition with a count and records it in the chunk manifest, and the
restore refuses such an object, naming it and the count, before producing anything.
"""

from __future__ import annotations

import logging
import time

import pytest

from kafka_s3.cli.render import describe_plan
from kafka_s3.core.errors import PlanError
from kafka_s3.core.manifest import Manifest
from tests.support.restore import end_offsets, read_topic, records

pytestmark = pytest.mark.integration

JSON_PLAIN = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
AVRO_ENVELOPE = {"format.class": "avro", "store.envelope": "true"}


@pytest.mark.parametrize(
    ("properties", "said"),
    [(JSON_PLAIN, "timestamps: time of restore"), (AVRO_ENVELOPE, "timestamps: as backed up")],
    ids=["plain", "envelope"],
)
def test_plan_and_summary_say_where_timestamps_come_from(
    properties, said, backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap, capsys
):
    from kafka_s3.cli.render import print_restore_summary

    source, target = fresh_topic(1), fresh_topic(1)
    produce(source, records(1, 6))  # timestamps of 2023
    backup(fresh_bucket, source, properties)
    restore = restorer(fresh_bucket, source, {**properties, "topic.rename": f"{source}:{target}"})
    plan_set = restore.plan()
    restore.check_targets(plan_set, create=False)
    assert said in describe_plan(plan_set)

    started_ms = int(time.time() * 1000)
    summary = restore.run(plan_set)
    print_restore_summary(summary)
    assert said in capsys.readouterr().out
    restored = [r["timestamp"] for r in read_topic(kafka_bootstrap, target)[0]]
    original = [r["timestamp"] for r in read_topic(kafka_bootstrap, source)[0]]
    if properties is JSON_PLAIN:
        assert all(ts >= started_ms - 1000 for ts in restored), (restored, started_ms)  # what the summary said
    else:
        assert restored == original


BYTEARRAY = {"format.class": "bytearray", "behavior.on.null.values": "ignore", "flush.size": "10"}


def test_bytearray_values_with_the_separator_or_tombstones_warn_and_restore_refuses(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, caplog
):
    source, target = fresh_topic(2), fresh_topic(2)
    values = [b"a", b"two\nlines", b"x\ny", b"b", b"ends with a newline\n"]  # partition 0: 3 of 5 ambiguous
    produce(source, [{"value": v, "partition": 0} for v in values] + [{"value": b"fine", "partition": 1}] * 3)
    caplog.set_level(logging.WARNING, logger="kafka_s3")
    backup(fresh_bucket, source, BYTEARRAY)

    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and source in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per partition, with the count; none for partition 1
    assert f"{source}[0]" in warnings[0] and "3 records" in warnings[0] and "format.bytearray.separator" in warnings[0]
    key = f"topics/{source}/partition=0/{source}+0+0000000000.bin"
    chunk = f"topics/_kafka-s3/bin/{source}/0/{0:020d}.chunk"
    manifest = Manifest.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=chunk)["Body"].read())
    assert [(f.key, f.ambiguous) for f in manifest.files] == [(key, 3)]

    restore = restorer(fresh_bucket, source, {**BYTEARRAY, "topic.rename": f"{source}:{target}"})
    with pytest.raises(PlanError) as failure:
        restore.run()
    message = str(failure.value)
    assert key in message and "3 records" in message and "format.bytearray.separator" in message
    assert end_offsets(kafka_bootstrap, target) == {0: 0, 1: 0}  # refused before producing anything
