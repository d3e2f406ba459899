"""Issue 17 items 2 and 5: topic configuration records (pure core)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import FormatError
from kafka_s3.core.topic_config import SERIES, TopicConfig, creation_configs, policy_warning


def test_topic_config_round_trip_and_name():
    record = TopicConfig("t", 12, 3, {"cleanup.policy": "compact", "retention.ms": "-1"})
    assert TopicConfig.from_bytes(record.to_bytes()) == record
    assert record.same_as(TopicConfig("t", 99, 3, dict(record.configs)))
    assert not record.same_as(TopicConfig("t", 99, 4, dict(record.configs)))
    name = SERIES.name(12)
    assert SERIES.time(name) == 12 and not name.endswith((".json", ".avro", ".parquet", ".bin", ".gz", ".csv"))
    with pytest.raises(FormatError, match="key-1"):
        TopicConfig.from_bytes(b"[]", "key-1")


def test_creation_defaults_win_over_recorded_configs():
    recorded = TopicConfig(
        "t", 1, 3, {"cleanup.policy": "compact", "segment.ms": "1", "leader.replication.throttled.replicas": "0:1"}
    )
    assert creation_configs(recorded, {"segment.ms": "2"}) == {"cleanup.policy": "compact", "segment.ms": "2"}
    assert creation_configs(None, {"retention.ms": "-1"}) == {"retention.ms": "-1"}


def test_policy_warning_only_on_a_difference():
    compact = TopicConfig("s", 1, 1, {"cleanup.policy": "compact,delete"})
    assert policy_warning("s", compact, "t", "delete,compact") is None
    warning = policy_warning("s", compact, "t", "delete")
    assert warning is not None and "'t'" in warning and "'s'" in warning and "cleanup.policy=compact,delete" in warning
    assert policy_warning("s", TopicConfig("s", 1, 1), "t", "delete") is None
