"""Where a backup resumes (issue 14, part B): from the bucket when the consumer group has no offsets, from a group
offset that is not a chunk start, and onto a log that is not the one the bucket and the group describe."""

from __future__ import annotations

import uuid

import pytest

from kafka_s3.core.errors import PlanError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import cli, data_keys, get, group_offsets, recreate_topic, write_properties

pytestmark = pytest.mark.integration


def _config(make_config, bucket, topic, **properties):
    props = {"format.class": "bytearray", "flush.size": "3", **properties}
    return make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})[1]


def _bodies(s3_client, bucket, topic) -> dict[str, bytes]:
    return {key: get(s3_client, bucket, key) for key in data_keys(s3_client, bucket, topic)}


def _values(n: int, start: int = 0) -> list[dict]:
    return [{"value": f"v{i}".encode()} for i in range(start, start + n)]


def test_resume_waits_for_uploading_predecessors(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, _values(9))
    config = _config(make_config, fresh_bucket, topic)
    Backup(config, engine=engine).run_once()
    complete = _bodies(s3_client, fresh_bucket, topic)
    assert len(complete) == 3
    # The state a crash leaves when chunk 3..5's data object was still uploading in the background while chunk
    # 6..8's manifest and files were already written: its manifest exists, its object does not.
    middle = sorted(complete)[1]
    s3_client.delete_object(Bucket=fresh_bucket, Key=middle)

    # The group's offsets are lost (another group): the backup resumes from the bucket.
    other = _config(make_config, fresh_bucket, topic, **{"group.id": f"other-{uuid.uuid4().hex[:8]}"})
    Backup(other, engine=engine).run_once()

    assert _bodies(s3_client, fresh_bucket, topic) == complete
    assert group_offsets(kafka_bootstrap, group_id(other), topic, 1) == {0: 9}


def test_resume_inside_a_chunk_writes_no_overlapping_object(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, _values(9))
    config = _config(make_config, fresh_bucket, topic)
    Backup(config, engine=engine).run_once()
    complete = _bodies(s3_client, fresh_bucket, topic)
    assert len(complete) == 3

    # A group positioned at 4, inside chunk 3..5 (offsets reset by hand, or copied from another consumer).
    other = _config(make_config, fresh_bucket, topic, **{"group.id": f"other-{uuid.uuid4().hex[:8]}"})
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(
        group_id(other), {(topic, 0): 4}, {(topic, 0): ""}
    )
    produce(topic, _values(3, start=9))
    Backup(other, engine=engine).run_once()

    bodies = _bodies(s3_client, fresh_bucket, topic)
    assert {k: bodies[k] for k in complete} == complete
    assert sorted(bodies) == sorted(complete) + [f"topics/{topic}/partition=0/{topic}+0+0000000009.bin"]
    assert bodies[f"topics/{topic}/partition=0/{topic}+0+0000000009.bin"] == b"v9\nv10\nv11\n"
    assert group_offsets(kafka_bootstrap, group_id(other), topic, 1) == {0: 12}


def test_group_offset_beyond_a_recreated_log_is_an_error(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, _values(6))
    config = _config(make_config, fresh_bucket, topic)
    Backup(config, engine=engine).run_once()
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 1) == {0: 6}

    recreate_topic(kafka_bootstrap, topic)  # the topic is deleted and re-created: a new log, offsets from 0 again
    produce(topic, _values(2, start=100))
    # Apache Kafka deletes a deleted topic's committed offsets with it (noida-db keeps them): the bucket then tells.
    kept = group_offsets(kafka_bootstrap, group_id(config), topic, 1)
    assert kept in ({0: 6}, {0: None})

    with pytest.raises(PlanError) as failure:
        Backup(config, engine=engine).run_once()
    message = str(failure.value)
    assert f"{topic}[0]" in message
    if kept == {0: 6}:
        assert f"group {group_id(config)}" in message and "offset 6" in message  # group state
    else:
        assert "chunk 3..5" in message and fresh_bucket in message  # bucket state
    assert "log offsets 0..1" in message  # log state
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 1) == kept

    # The command ends with the same message and a non-zero exit code.
    raw = make_config(fresh_bucket, topic, format__class="bytearray", flush__size="3")[0]
    result = cli("backup", "--once", "--no-progress", "--config", str(write_properties(tmp_path / "b.properties", raw)))
    assert result.returncode == PlanError.exit_code, result.stderr[-2000:]
    assert f"{topic}[0]" in result.stderr and "log offsets 0..1" in result.stderr


@pytest.mark.timeout(300)
def test_bucket_beyond_the_log_end_is_an_error(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, _values(6))
    Backup(_config(make_config, fresh_bucket, topic), engine=engine).run_once()

    # A DR cluster (or a re-created topic) whose log is shorter than what the bucket holds; no group offsets.
    recreate_topic(kafka_bootstrap, topic)
    produce(topic, _values(2, start=100))
    other = _config(make_config, fresh_bucket, topic, **{"group.id": f"other-{uuid.uuid4().hex[:8]}"})

    with pytest.raises(PlanError) as failure:
        Backup(other, engine=engine).run_once()
    message = str(failure.value)
    assert f"{topic}[0]" in message
    assert "chunk 3..5" in message and fresh_bucket in message  # bucket state
    assert "log offsets 0..1" in message  # log state
    assert group_offsets(kafka_bootstrap, group_id(other), topic, 1) == {0: None}
