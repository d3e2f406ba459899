"""Bad input: every fault a restore can meet, each with a clear error (naming the object key, the position, the
config key) and, under ``behavior.on.error=fail``, nothing produced past the fault: records before it in the same
source partition may be produced and committed, nothing after — not even inside an aborted transaction. Under
``ignore`` and ``log`` the bad object is skipped and reported with its key and position."""

from __future__ import annotations

import json
import logging

import pytest

from kafka_s3.core.errors import (
    BucketNotFoundError,
    KafkaError,
    LayoutError,
    PlanError,
    RestoreFailed,
    StoreAccessDeniedError,
)
from tests.support.integration import list_keys
from tests.support.restore import (
    as_another_tools_bucket,
    end_offsets,
    fidelity,
    get_object,
    read_topic,
    records,
    replace_object,
    restore_progress,
    same_size_garbage,
)

pytestmark = pytest.mark.integration

PER_PARTITION = 9  # flush.size=3: objects start at offsets 0, 3 and 6
AVRO_ENVELOPE = {"format.class": "avro", "avro.codec": "deflate", "store.envelope": "true"}
JSON_PLAIN = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
JSON_GZIP = {**JSON_PLAIN, "s3.compression.type": "gzip"}


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    """``backed_up(properties, partitions=1)`` → source topic, with 9 records per partition backed up."""

    def make(properties: dict, partitions: int = 1) -> str:
        topic = fresh_topic(partitions)
        produce(topic, records(partitions, PER_PARTITION))
        assert backup(fresh_bucket, topic, properties).records == partitions * PER_PARTITION
        return topic

    return make


def object_key(topic: str, partition: int, start: int, extension: str) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}{extension}"


def json_values(rows: list[dict]) -> list:
    return [json.loads(r["value"]) for r in rows]


def assert_stopped_at_fault(bootstrap, source, target, config, partition, at_least, before, exact=False):
    """Target partition ``partition`` holds a prefix of the source partition of at least ``at_least`` records and
    fewer than ``before``: the records before the fault, committed, with the restore's progress right after them;
    nothing else, not even uncommitted (aborted) records."""
    committed = read_topic(bootstrap, target)[partition]
    everything = read_topic(bootstrap, target, "read_uncommitted")[partition]
    assert fidelity(everything) == fidelity(committed), "records past the fault reached the target log"
    original = read_topic(bootstrap, source)[partition]
    n = len(committed)
    assert at_least <= n < before, n
    if exact:
        assert fidelity(committed) == fidelity(original[:n])
    else:
        assert json_values(committed) == json_values(original[:n])
    assert restore_progress(bootstrap, config, source, target)[partition] == n
    return n


# ---------------------------------------------------------------------------------------------------- bad objects
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_avro_object_fails_naming_it_and_produces_nothing_past_it(
    damage, backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source = backed_up(AVRO_ENVELOPE, partitions=2)
    target = fresh_topic(2)
    bad = object_key(source, 0, 3, ".avro")
    good_bytes = get_object(s3_client, fresh_bucket, bad)
    body = same_size_garbage(good_bytes) if damage == "garbage" else good_bytes[:-20]
    if damage == "truncated":
        as_another_tools_bucket(s3_client, fresh_bucket)  # the manifest's sizes would refuse it before producing
    replace_object(s3_client, fresh_bucket, bad, body)

    restore = restorer(fresh_bucket, source, {**AVRO_ENVELOPE, "topic.rename": f"{source}:{target}"})
    with pytest.raises(RestoreFailed) as failure:
        restore.run()
    message = str(failure.value)
    assert f"{source}[0]" in message and bad in message
    assert ("at header" if damage == "garbage" else "at block 1") in message
    assert_stopped_at_fault(kafka_bootstrap, source, target, restore.config, 0, 3, 6, exact=True)
    # The other source partition is independent of the fault: restored whole.
    by_partition = {r.source_partition: r for r in failure.value.summary.results}
    assert by_partition[0].error and by_partition[0].records == 3
    assert by_partition[1].error is None and by_partition[1].records == PER_PARTITION
    assert fidelity(read_topic(kafka_bootstrap, target)[1]) == fidelity(read_topic(kafka_bootstrap, source)[1])

    # Once the object is repaired, the restore resumes right after the fault: every record exactly once, in order.
    replace_object(s3_client, fresh_bucket, bad, good_bytes)
    again = restorer(fresh_bucket, source, {**AVRO_ENVELOPE, "topic.rename": f"{source}:{target}"}).run()
    assert [(r.source_partition, r.resumed_from, r.records) for r in again.results] == [
        (0, 3, PER_PARTITION - 3),
        (1, PER_PARTITION, 0),
    ]
    assert fidelity(read_topic(kafka_bootstrap, target)[0]) == fidelity(read_topic(kafka_bootstrap, source)[0])


def test_truncated_gzip_object_fails_naming_it_and_produces_nothing_past_it(
    backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source = backed_up(JSON_GZIP)
    target = fresh_topic(1)
    bad = object_key(source, 0, 3, ".json.gz")
    body = get_object(s3_client, fresh_bucket, bad)
    as_another_tools_bucket(s3_client, fresh_bucket)  # as another tool's bucket: the damage is met while restoring
    replace_object(s3_client, fresh_bucket, bad, body[: len(body) // 2])

    restore = restorer(fresh_bucket, source, {**JSON_GZIP, "topic.rename": f"{source}:{target}"})
    with pytest.raises(RestoreFailed, match="gzip") as failure:
        restore.run()
    assert bad in str(failure.value) and "at byte" in str(failure.value)
    assert_stopped_at_fault(kafka_bootstrap, source, target, restore.config, 0, 3, 6)


def test_invalid_json_line_fails_naming_object_and_line(
    backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    bad = object_key(source, 0, 3, ".json")
    lines = get_object(s3_client, fresh_bucket, bad).split(b"\n")
    lines[1] = b'{"n": 1001, "s": '  # the second record of the object is cut short
    as_another_tools_bucket(s3_client, fresh_bucket)
    replace_object(s3_client, fresh_bucket, bad, b"\n".join(lines))

    restore = restorer(fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}"})
    with pytest.raises(RestoreFailed, match="invalid JSON line") as failure:
        restore.run()
    assert f"in {bad} at line 2" in str(failure.value)
    # Item 4: fail stops right before the bad record, after every record before it (offset 3, the object's first).
    assert_stopped_at_fault(kafka_bootstrap, source, target, restore.config, 0, 4, 5)


@pytest.mark.issue(14, item=4)
@pytest.mark.parametrize("mode", ["ignore", "log"])
def test_ignore_and_log_skip_only_the_bad_record_and_count_it(
    mode, backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap, caplog, capsys
):
    from kafka_s3.cli.render import print_restore_summary

    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    bad = object_key(source, 0, 3, ".json")
    lines = get_object(s3_client, fresh_bucket, bad).split(b"\n")
    lines[1] = b"not json at all"  # the record at offset 4
    as_another_tools_bucket(
        s3_client, fresh_bucket
    )  # as another tool's bucket: the manifest's size would refuse it first
    replace_object(s3_client, fresh_bucket, bad, b"\n".join(lines))

    caplog.set_level(logging.WARNING, logger="kafka_s3")
    summary = restorer(
        fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}", "behavior.on.error": mode}
    ).run()
    assert [(p.key, p.position, p.records, p.first_offset) for p in summary.problems] == [(bad, "line 2", 1, 4)]
    assert "invalid JSON line" in summary.problems[0].message
    assert not summary.gaps  # a skipped record is reported as skipped, not as missing offsets
    original = json_values(read_topic(kafka_bootstrap, source)[0])
    assert json_values(read_topic(kafka_bootstrap, target)[0]) == original[:4] + original[5:]  # only the bad one
    print_restore_summary(summary)
    printed = capsys.readouterr().out
    assert f"skipped 1 record (offset 4) of {bad} at line 2" in printed
    assert "skipped: 1 record at 1 position" in printed
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and bad in r.getMessage()]
    if mode == "log":
        assert any("line 2" in line and "offset 4" in line for line in logged), logged
    else:
        assert not logged


# ---------------------------------------------------------------------------------------------------- object names
def test_other_extensions_are_ignored(backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    for key, body in (
        (object_key(source, 0, 100, ".avro"), b"not avro"),
        (object_key(source, 0, 200, ".json.gz"), b"not gzip"),
        (f"topics/{source}/partition=0/notes.txt", b"hello"),
        (f"topics/{source}/partition=0/{source}+0+0000000300.json.bak", b"{}\n"),
    ):
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    summary = restorer(fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}"}).run()
    assert summary.records == PER_PARTITION and not summary.problems and not summary.gaps
    assert [r.objects for r in summary.results] == [3]
    assert json_values(read_topic(kafka_bootstrap, target)[0]) == json_values(read_topic(kafka_bootstrap, source)[0])


def test_objects_outside_topics_dir_are_ignored(
    backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    stray = b'{"n": -1, "s": "stray"}\n'
    name = f"{source}+0+0000000100.json"
    for key in (
        f"other/{source}/partition=0/{name}",
        f"topicsx/{source}/partition=0/{name}",
        name,
        f"backup/topics/{source}/partition=0/{name}",
    ):
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=stray)
    summary = restorer(fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}"}).run()
    assert summary.records == PER_PARTITION and not summary.problems
    assert json_values(read_topic(kafka_bootstrap, target)[0]) == json_values(read_topic(kafka_bootstrap, source)[0])


def test_unparseable_object_name_fails_before_anything_is_produced(
    backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    bad = f"topics/{source}/partition=0/{source}+0+first.json"
    s3_client.put_object(Bucket=fresh_bucket, Key=bad, Body=b'{"n": -1}\n')
    restore = restorer(fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}"})
    with pytest.raises(LayoutError) as failure:
        restore.run()
    assert bad in str(failure.value) and "<topic>+<partition>+<offset>.json" in str(failure.value)
    assert end_offsets(kafka_bootstrap, target) == {0: 0}
    assert restore_progress(kafka_bootstrap, restore.config, source, target) == {0: None}


@pytest.mark.parametrize("mode", ["ignore", "log"])
def test_unparseable_object_name_is_skipped_and_reported_under_ignore_and_log(
    mode, backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap, caplog
):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    bad = f"topics/{source}/partition=0/{source}-0-0000000009.json"
    s3_client.put_object(Bucket=fresh_bucket, Key=bad, Body=b'{"n": -1}\n')
    caplog.set_level(logging.WARNING, logger="kafka_s3")
    summary = restorer(
        fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}", "behavior.on.error": mode}
    ).run()
    assert summary.records == PER_PARTITION
    assert [(p.key, p.position) for p in summary.problems] == [(bad, "name")]
    assert json_values(read_topic(kafka_bootstrap, target)[0]) == json_values(read_topic(kafka_bootstrap, source)[0])
    logged = [r.getMessage() for r in caplog.records if bad in r.getMessage()]
    assert bool(logged) == (mode == "log"), logged


# ---------------------------------------------------------------------------------------------------- targets
def test_target_with_fewer_partitions_fails_before_anything_is_produced(
    backed_up, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    source = backed_up(JSON_PLAIN, partitions=3)
    target = fresh_topic(2)
    restore = restorer(fresh_bucket, source, {**JSON_PLAIN, "topic.rename": f"{source}:{target}"})
    with pytest.raises(PlanError) as failure:
        restore.run()
    message = str(failure.value)
    assert repr(target) in message and "has 2 partitions" in message and "partition 2" in message
    assert "--partitions 3" in message
    assert end_offsets(kafka_bootstrap, target) == {0: 0, 1: 0}
    assert restore_progress(kafka_bootstrap, restore.config, source, target) == {0: None, 1: None}


def test_missing_target_topic_fails_unless_topic_creation_is_enabled(
    backed_up, restorer, fresh_bucket, kafka_bootstrap
):
    from confluent_kafka.admin import AdminClient, ConfigResource

    from kafka_s3.io.kafka.admin import Admin

    source = backed_up(JSON_PLAIN, partitions=3)
    target = f"{source}-new"
    properties = {**JSON_PLAIN, "topic.rename": f"{source}:{target}"}
    with pytest.raises(PlanError, match=f"target topic '{target}' does not exist.*topic.creation.enable=true"):
        restorer(fresh_bucket, source, properties).run()
    assert target not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()

    summary = restorer(
        fresh_bucket,
        source,
        {**properties, "topic.creation.enable": "true", "topic.creation.default.retention.ms": "-1"},
    ).run()
    assert summary.records == 3 * PER_PARTITION
    assert Admin({"bootstrap.servers": kafka_bootstrap}).topics()[target] == 3  # the source's partition count
    resource = ConfigResource(ConfigResource.Type.TOPIC, target)
    client = AdminClient({"bootstrap.servers": kafka_bootstrap})
    described = client.describe_configs([resource])[resource].result(30)
    assert described["retention.ms"].value == "-1"  # topic.creation.default.* configs are applied
    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, source)
    assert {p: json_values(rows) for p, rows in restored.items()} == {
        p: json_values(rows) for p, rows in original.items()
    }


# ---------------------------------------------------------------------------------------------------- services
def test_missing_bucket_is_an_error_naming_it(restorer, fresh_topic, kafka_bootstrap):
    source = fresh_topic(1)
    bucket = "no-such-bucket-" + source[2:]
    with pytest.raises(BucketNotFoundError, match=bucket):
        restorer(bucket, source, {**JSON_PLAIN, "topic.creation.enable": "true"}).run()


def test_wrong_s3_credentials_are_an_error(backed_up, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    source = backed_up(JSON_PLAIN)
    target = fresh_topic(1)
    restore = restorer(
        fresh_bucket,
        source,
        {**JSON_PLAIN, "topic.rename": f"{source}:{target}", "aws.secret.access.key": "wrong-secret-0123456789"},
    )
    with pytest.raises(StoreAccessDeniedError) as failure:
        restore.run()
    assert fresh_bucket in str(failure.value) and "wrong-secret-0123456789" not in str(failure.value)
    assert end_offsets(kafka_bootstrap, target) == {0: 0}


def test_unreachable_broker_is_an_error_naming_it(backed_up, restorer, fresh_bucket):
    source = backed_up(JSON_PLAIN)
    restore = restorer(
        fresh_bucket,
        source,
        {**JSON_PLAIN, "bootstrap.servers": "127.0.0.1:1", "topic.rename": f"{source}:{source}-copy"},
    )
    restore.admin.timeout = 5  # the default 30 s only makes the test slower
    with pytest.raises(KafkaError, match="127.0.0.1:1"):
        restore.run()


# ---------------------------------------------------------------------------------------------------- gaps
@pytest.mark.parametrize("properties", [JSON_PLAIN, AVRO_ENVELOPE], ids=["plain", "envelope"])
def test_offsets_missing_from_the_backup_are_reported(
    properties, backed_up, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap, caplog
):
    source = backed_up(properties, partitions=2)
    target = fresh_topic(2)
    extension = ".json" if properties is JSON_PLAIN else ".avro"
    lost = object_key(source, 1, 3, extension)
    as_another_tools_bucket(
        s3_client, fresh_bucket
    )  # another tool's bucket: a gap is reported (test_restore_integrity)
    s3_client.delete_object(Bucket=fresh_bucket, Key=lost)
    assert lost not in list_keys(s3_client, fresh_bucket, f"topics/{source}/")

    caplog.set_level(logging.WARNING, logger="kafka_s3")
    summary = restorer(fresh_bucket, source, {**properties, "topic.rename": f"{source}:{target}"}).run()
    assert summary.records == 2 * PER_PARTITION - 3
    assert [(g.topic, g.partition, g.first, g.last) for g in summary.gaps] == [(source, 1, 3, 5)]
    gap = summary.gaps[0]
    assert gap.before == object_key(source, 1, 0, extension) and gap.after == object_key(source, 1, 6, extension)
    assert any(f"{source}[1]: offsets 3..5" in r.getMessage() for r in caplog.records), caplog.text
    assert [len(rows) for rows in read_topic(kafka_bootstrap, target).values()] == [PER_PARTITION, 6]
