"""Consumer-group offsets through the Admin facade, against the suite's broker."""

from __future__ import annotations

import uuid

import pytest

from kafka_s3.io.kafka.admin import Admin

pytestmark = pytest.mark.integration


@pytest.mark.issue(13, item=2)
def test_offsets_committed_with_and_without_metadata_read_back(kafka_bootstrap, fresh_topic):
    """Found while making every group call retried: a commit without metadata strings failed before it was sent
    (``TopicPartition(..., metadata=None)`` is refused by confluent-kafka)."""
    topic = fresh_topic(2)
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    group = f"g-{uuid.uuid4().hex[:8]}"
    admin.commit_group_offsets(group, {(topic, 0): 3})
    admin.commit_group_offsets(group, {(topic, 1): 5}, metadata={(topic, 1): "identity"})
    assert admin.group_offsets_with_metadata(group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): (3, ""),
        (topic, 1): (5, "identity"),
    }
    admin.delete_group(group)
