"""Issue 14 item 6: offset-bounded restores of formats without stored offsets, on a log with offset gaps.

A transactional producer leaves a commit marker after each transaction, so a backup object can hold offsets
0, 1, 2, 4, 5, 6. Without the envelope, offsets are derived (start + row): a bound inside such an object would pick
the wrong records, silently. The restore refuses it naming the bound; a bound at an object start stays exact, and so
does a bound inside an object without gaps.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kafka_s3.core.errors import PlanError, RestoreFailed
from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets
from tests.support.restore import as_another_tools_bucket, read_topic, restore_progress

pytestmark = pytest.mark.integration

PLAIN = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "flush.size": "6",
}


@pytest.fixture
def gapped(backup, fresh_bucket, fresh_topic, kafka_bootstrap):
    """A topic of 4 transactions of 3 records (offsets 0-2, 4-6, 8-10, 12-14), backed up in objects of 6 records."""
    topic = fresh_topic(1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"gaps-{topic}"})
    producer.init_transactions(30)
    n = 0
    for _ in range(4):
        producer.begin_transaction()
        for _ in range(3):
            producer.produce(topic, json.dumps({"n": n}).encode(), partition=0)
            n += 1
        producer.commit_transaction(30)
    assert [r["offset"] for r in read_topic(kafka_bootstrap, topic)[0]] == [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]
    backup(fresh_bucket, topic, PLAIN)
    return topic


def restore_with(restorer, bucket, source, target, option: str, text: str):
    key = "from_offsets" if option == "from" else "until_offsets"
    options = RestoreOptions(**{key: parse_offsets(text, option)})
    return restorer(bucket, source, {**PLAIN, "topic.rename": f"{source}:{target}"}, options)


def ns(bootstrap: str, topic: str) -> list[int]:
    return [json.loads(r["value"])["n"] for r in read_topic(bootstrap, topic)[0]]


def test_a_bound_inside_an_object_with_gaps_is_refused_naming_it(
    gapped, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    target = fresh_topic(1)
    restore = restore_with(restorer, fresh_bucket, gapped, target, "from", "0:5")  # the record at offset 5 is n=4
    with pytest.raises(
        PlanError, match=rf"--from-offset {gapped}:0:5 cannot be honoured: it falls inside .*\+0000000000\.json"
    ):
        restore.run()
    assert ns(kafka_bootstrap, target) == []
    assert restore_progress(kafka_bootstrap, restore.config, gapped, target).get(0) is None
    with pytest.raises(PlanError, match=rf"--until-offset {gapped}:0:10 cannot be honoured"):
        restore_with(restorer, fresh_bucket, gapped, target, "until", "0:10").run()


def test_bounds_at_object_starts_are_exact(gapped, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    target = fresh_topic(1)
    assert restore_with(restorer, fresh_bucket, gapped, target, "from", "0:8").run().records == 6
    assert ns(kafka_bootstrap, target) == [6, 7, 8, 9, 10, 11]


def test_another_tools_objects_are_counted_before_a_bound_inside_them_is_trusted(
    gapped, restorer, fresh_bucket, fresh_topic, kafka_bootstrap, s3_client
):
    as_another_tools_bucket(s3_client, fresh_bucket)  # no manifest: the object's 6 records against its 8 offsets (0..7)
    target = fresh_topic(1)
    restore = restore_with(restorer, fresh_bucket, gapped, target, "from", "0:5")
    with pytest.raises(RestoreFailed, match=rf"--from-offset {gapped}:0:5 cannot be honoured"):
        restore.run()
    assert ns(kafka_bootstrap, target) == []
