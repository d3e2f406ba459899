"""Issue 14 item 3: restore progress has an identity (source, target cluster/topic/partition, bounds).

A target deleted and re-created gets every record again (never "nothing to do" with records missing); a finished
restore run again writes nothing; progress of another restore (other bounds, another bucket) on a non-empty target is
refused before anything is produced, and ``--restart`` restores from the start.
"""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import PlanError
from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets
from tests.support.restore import fidelity, read_topic, records, recreate_empty

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "avro", "store.envelope": "true"}


@pytest.fixture
def source(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(2)
    produce(topic, records(2, 9))
    backup(fresh_bucket, topic, ENVELOPE)
    return topic


def counts(bootstrap: str, topic: str) -> list[int]:
    return [len(rows) for rows in read_topic(bootstrap, topic).values()]


def test_a_recreated_target_topic_is_restored_again(source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    target = fresh_topic(2)
    properties = {**ENVELOPE, "topic.rename": f"{source}:{target}"}
    assert restorer(fresh_bucket, source, properties).run().records == 18
    again = restorer(fresh_bucket, source, properties).run()
    assert again.records == 0  # a finished restore run again writes nothing
    assert counts(kafka_bootstrap, target) == [9, 9]

    recreate_empty(kafka_bootstrap, target, 2)  # the disaster happens again: the target is lost
    summary = restorer(fresh_bucket, source, properties).run()
    assert summary.records == 18
    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, source)
    assert {p: fidelity(rows) for p, rows in restored.items()} == {p: fidelity(rows) for p, rows in original.items()}


def test_other_bounds_on_a_non_empty_target_are_refused_and_restart_starts_over(
    source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    target = fresh_topic(2)
    properties = {**ENVELOPE, "topic.rename": f"{source}:{target}"}
    first = RestoreOptions(until_offsets=parse_offsets("0:4,1:4", "--until-offset"))
    assert restorer(fresh_bucket, source, properties, first).run().records == 8

    with pytest.raises(PlanError, match=r"another restore \(bounds") as refused:
        restorer(fresh_bucket, source, properties).run()
    assert "--restart" in str(refused.value) and f"{target}[0]" in str(refused.value)
    assert counts(kafka_bootstrap, target) == [4, 4]  # nothing produced

    again = restorer(fresh_bucket, source, properties, RestoreOptions(restart=True)).run()
    assert again.records == 18
    assert counts(kafka_bootstrap, target) == [13, 13]  # from the start, as asked: the first 4 are there twice
    assert restorer(fresh_bucket, source, properties).run().records == 0  # and it is now the target's progress


def test_progress_from_another_bucket_is_not_trusted(
    source, backup, restorer, fresh_bucket, fresh_topic, kafka_bootstrap, s3_client, remove_bucket
):
    other = f"{fresh_bucket}-b"
    s3_client.create_bucket(Bucket=other)
    try:
        backup(other, source, ENVELOPE)
        target = fresh_topic(2)
        # One restore name (so one progress group) for both buckets.
        properties = {**ENVELOPE, "topic.rename": f"{source}:{target}", "name": f"restore-{target}"}
        assert restorer(other, source, properties).run().records == 18
        recreate_empty(kafka_bootstrap, target, 2)
        # Same restore name, another bucket, empty target: fresh, every record.
        assert restorer(fresh_bucket, source, properties).run().records == 18
        # And back to the first bucket on the now full target: refused, naming the change.
        with pytest.raises(PlanError, match="source"):
            restorer(other, source, properties).run()
        assert counts(kafka_bootstrap, target) == [9, 9]
    finally:
        remove_bucket(other)
