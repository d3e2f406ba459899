"""The feedback-loop guard (no restore into the non-empty topic a backup came from, unless allowed or resuming) and
the delivery modes: ``exactly.once.support`` disabled (at-least-once), requested and required."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import PlanError, RestoreFailed
from kafka_s3.io.kafka.admin import Admin
from tests.support.restore import (
    end_offsets,
    get_object,
    read_topic,
    records,
    recreate_empty,
    replace_object,
    restore_progress,
    same_size_garbage,
)

pytestmark = pytest.mark.integration

JSON = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
ENVELOPE = {"format.class": "avro", "store.envelope": "true"}


def values(bootstrap, topic) -> dict[int, list[bytes]]:
    return {p: [r["value"] for r in rows] for p, rows in read_topic(bootstrap, topic).items()}


def test_restoring_into_the_non_empty_source_topic_is_refused_unless_allowed(
    backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(2)
    produce(topic, records(2, 4))
    backup(fresh_bucket, topic, ENVELOPE)
    before = values(kafka_bootstrap, topic)

    restore = restorer(fresh_bucket, topic, ENVELOPE)
    with pytest.raises(PlanError) as refused:
        restore.run()
    assert f"restoring into {topic!r}, the topic the backup came from, which is not empty" in str(refused.value)
    assert "restore.allow.same.topic=true" in str(refused.value)
    assert values(kafka_bootstrap, topic) == before
    assert restore_progress(kafka_bootstrap, restore.config, topic, topic) == {0: None, 1: None}

    summary = restorer(fresh_bucket, topic, {**ENVELOPE, "restore.allow.same.topic": "true"}).run()
    assert summary.records == 8
    assert values(kafka_bootstrap, topic) == {p: rows + rows for p, rows in before.items()}  # duplicated, as asked


def test_an_interrupted_restore_into_the_source_topic_resumes(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, records(1, 9))
    backup(fresh_bucket, topic, ENVELOPE)
    original = read_topic(kafka_bootstrap, topic)[0]
    recreate_empty(kafka_bootstrap, topic, 1)  # the topic is lost: restore it in place

    # The first attempt stops at a damaged object, after the records before it.
    damaged = f"topics/{topic}/partition=0/{topic}+0+0000000003.avro"
    good = get_object(s3_client, fresh_bucket, damaged)
    replace_object(s3_client, fresh_bucket, damaged, same_size_garbage(good))
    with pytest.raises(RestoreFailed):
        restorer(fresh_bucket, topic, ENVELOPE).run()
    assert len(read_topic(kafka_bootstrap, topic)[0]) == 3

    # The topic is no longer empty, but this is the same restore resuming: allowed, and exact.
    replace_object(s3_client, fresh_bucket, damaged, good)
    summary = restorer(fresh_bucket, topic, ENVELOPE).run()
    assert [(r.resumed_from, r.records) for r in summary.results] == [(3, 6)]
    restored = read_topic(kafka_bootstrap, topic)[0]
    assert [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in restored] == [
        (r["key"], r["value"], r["headers"], r["timestamp"]) for r in original
    ]

    # A different restore (another name, so no progress of its own) is still refused.
    with pytest.raises(PlanError, match="not empty"):
        restorer(fresh_bucket, topic, {**ENVELOPE, "name": f"other-{topic}"}).run()


@pytest.mark.parametrize("mode", ["disabled", "requested", "required"])
def test_delivery_modes_restore_exactly_the_backup(
    mode, backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(2)
    produce(topic, records(2, 7))
    backup(fresh_bucket, topic, JSON)
    target = fresh_topic(2)
    properties = {
        **JSON,
        "topic.rename": f"{topic}:{target}",
        "exactly.once.support": mode,
        "restore.transaction.records": "2",
    }  # several transactions (or progress commits) per partition
    restore = restorer(fresh_bucket, topic, properties)
    summary = restore.run()
    assert restore.exactly_once() is (mode != "disabled")  # this broker supports transactions
    assert summary.records == 14
    assert {p: [json.loads(v) for v in vs] for p, vs in values(kafka_bootstrap, target).items()} == {
        p: [json.loads(v) for v in vs] for p, vs in values(kafka_bootstrap, topic).items()
    }
    ends = end_offsets(kafka_bootstrap, target)
    if mode == "disabled":
        assert ends == {0: 7, 1: 7}  # plain idempotent produce: one offset per record
    else:
        assert all(end > 7 for end in ends.values()), ends  # transaction markers take offsets too
    assert restore_progress(kafka_bootstrap, restore.config, topic, target) == {0: 7, 1: 7}

    again = restorer(fresh_bucket, topic, properties).run()
    assert again.records == 0
    assert sum(len(v) for v in values(kafka_bootstrap, target).values()) == 14


def test_a_created_target_gets_the_source_partition_count_even_when_its_last_partitions_were_empty(
    backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(4)
    produce(topic, records(2, 3))  # partitions 2 and 3 stay empty: no object names them
    backup(fresh_bucket, topic, JSON)
    target = f"{topic}-new"
    summary = restorer(
        fresh_bucket,
        topic,
        {
            **JSON,
            "topic.rename": f"{topic}:{target}",
            "topic.creation.enable": "true",
            "topic.creation.default.retention.ms": "-1",
        },
    ).run()
    assert summary.records == 6
    assert Admin({"bootstrap.servers": kafka_bootstrap}).topics()[target] == 4


@pytest.mark.parametrize(("tasks_max", "tasks"), [("0", 3), ("2", 2), ("1", 1)])
def test_tasks_max_caps_the_restore_tasks(
    tasks_max, tasks, spark, backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic, target = fresh_topic(3), fresh_topic(3)
    produce(topic, records(3, 4))
    backup(fresh_bucket, topic, JSON)
    summary = restorer(fresh_bucket, topic, {**JSON, "topic.rename": f"{topic}:{target}", "tasks.max": tasks_max}).run()
    assert summary.records == 12
    assert {p: [json.loads(v) for v in vs] for p, vs in values(kafka_bootstrap, target).items()} == {
        p: [json.loads(v) for v in vs] for p, vs in values(kafka_bootstrap, topic).items()
    }
    tracker = spark.sparkContext.statusTracker()
    job = tracker.getJobInfo(max(tracker.getJobIdsForGroup()))  # the restore's job: the session's latest
    assert sum(tracker.getStageInfo(stage).numTasks for stage in job.stageIds) == tasks


def test_a_target_holding_records_no_restore_wrote_is_refused_unless_appending(
    backup, restorer, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    """Issue 26: the dry run said "target: ok" and the restore appended after 50 foreign records without a word."""
    from kafka_s3.pipelines.read.options import RestoreOptions
    from tests.support.restore import run_cli, write_properties

    source, target = fresh_topic(1), fresh_topic(1)
    produce(source, records(1, 6))
    backup(fresh_bucket, source, ENVELOPE)
    produce(target, [{"value": b"foreign"} for _ in range(50)])
    raw, _ = make_config(fresh_bucket, source, source=True, format__class="avro", store__envelope="true")
    raw["topic.rename"] = f"{source}:{target}"
    path = str(write_properties(tmp_path / "restore.properties", raw))
    for flags in (["--dry-run"], []):
        result = run_cli(["restore", "-c", path, "--no-progress", *flags])
        assert result.returncode == PlanError.exit_code, result.stdout + result.stderr[-3000:]
        said = (result.stdout + result.stderr).replace("\n", " ")
        assert f"{target}[0] already holds records that no restore's progress accounts for" in said
        assert "--append" in said
    assert len(read_topic(kafka_bootstrap, target)[0]) == 50
    restored = restorer(
        fresh_bucket, source, {**ENVELOPE, "topic.rename": f"{source}:{target}"}, RestoreOptions(append=True)
    )
    assert restored.run().records == 6
    assert len(read_topic(kafka_bootstrap, target)[0]) == 56
