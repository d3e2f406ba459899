"""Issue 29 item 1 in the DataFrame reader: a pruned backup reads from its new start, and a starting bound before it
is an error naming the first restorable offset and time, never a silently shorter DataFrame."""

from __future__ import annotations

import json

import pytest

import kafka_s3
from tests.support.restore import records

pytestmark = [pytest.mark.integration, pytest.mark.issue(29, item=1)]

BACKUP = {"format.class": "json", "store.envelope": "true", "flush.size": "3", "cycle.interval.ms": "0"}
BASE = 1_700_000_000_000


def test_the_reader_starts_at_the_pruned_start_and_refuses_a_bound_before_it(
    spark, make_config, fresh_bucket, fresh_topic, produce, backup
):
    topic = fresh_topic(2)
    produce(topic, records(2, 12))
    backup(fresh_bucket, topic, BACKUP)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in BACKUP.items()})
    assert kafka_s3.prune(raw, before=BASE + 6_000, execute=True).chunks == 4  # offsets 0..5 of each partition

    def load(**options: str):
        return spark.read.format("kafka-s3").options(**raw, **options).load()

    offsets = sorted((r.partition, r.offset) for r in load().select("partition", "offset").collect())
    assert offsets == [(p, o) for p in (0, 1) for o in range(6, 12)]
    with pytest.raises(Exception, match=rf"startingOffsets {topic}\[0\]=2: offset 2 of {topic}\[0\] was pruned"):
        load(startingOffsets=json.dumps({topic: {"0": 2, "1": -2}})).count()
    with pytest.raises(Exception, match="the first restorable offset is 6 \\(2023-11-14T22:13:26Z\\)"):
        load(startingTimestamp=str(BASE)).count()
