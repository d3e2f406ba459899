"""Issue 14 item 14: ``exactly.once.support=requested`` treats only "the cluster has no transactions" as unsupported.

A probe that fails for another reason (here the broker refuses the producer's transaction timeout) is an error that
says so, with nothing produced — not a quiet fall-back to at-least-once. The log says which mode was chosen.
"""

from __future__ import annotations

import logging

import pytest

from kafka_s3.core.errors import KafkaError
from tests.support.restore import read_topic, records

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "avro", "store.envelope": "true"}


@pytest.fixture
def source(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(1)
    produce(topic, records(1, 6))
    backup(fresh_bucket, topic, ENVELOPE)
    return topic


def test_a_failing_probe_is_an_error_not_unsupported(source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    target = fresh_topic(1)
    properties = {
        **ENVELOPE,
        "topic.rename": f"{source}:{target}",
        "exactly.once.support": "requested",
        "producer.override.transaction.timeout.ms": "2147483647",  # above the broker's max.transaction.timeout.ms
    }
    with pytest.raises(
        KafkaError, match=r"exactly.once.support=requested: probing .* failed \(.*[Tt]ransaction timeout"
    ):
        restorer(fresh_bucket, source, properties).run()
    assert read_topic(kafka_bootstrap, target)[0] == []


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("requested", "restoring exactly once (transactions; exactly.once.support=requested)"),
        ("disabled", "restoring at least once (exactly.once.support=disabled)"),
    ],
)
def test_the_log_says_which_mode_was_chosen(
    mode, said, source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap, caplog
):
    target = fresh_topic(1)
    caplog.set_level(logging.INFO, logger="kafka_s3")
    properties = {**ENVELOPE, "topic.rename": f"{source}:{target}", "exactly.once.support": mode}
    assert restorer(fresh_bucket, source, properties).run().records == 6
    assert said in caplog.text
