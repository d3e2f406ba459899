"""Topic configurations in the backup: each backed-up topic's partition count and non-default configs
(``cleanup.policy``, ``retention.*``, ``segment.*``, ``min.insync.replicas``, ``compression.type``, ...) as seen at
backup time, with history: one immutable object ``<manifest root>/<topic>/topic-config/<at ms>.topicconfig`` whenever
they changed (not a data format's extension). A restore with ``restore.topic.configs=true`` creates missing targets
with them; an existing target whose ``cleanup.policy`` differs from the source's gets a warning in the plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kafka_s3.core.errors import FormatError
from kafka_s3.core.snapshots import Series

CONFIG_DIR = "topic-config"
CONFIG_EXTENSION = ".topicconfig"
# Describe the source cluster, not the topic: never carried over to another cluster.
NOT_CARRIED = frozenset({"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"})


@dataclass(frozen=True)
class TopicConfig:
    topic: str
    at: int  # epoch ms
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # the topic's own (non-default) configs

    def to_bytes(self) -> bytes:
        doc = {"topic": self.topic, "at": self.at, "partitions": self.partitions, "configs": dict(self.configs)}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "") -> TopicConfig:
        try:
            doc = json.loads(data)
            configs = {str(k): str(v) for k, v in doc["configs"].items()}
            return cls(str(doc["topic"]), int(doc["at"]), int(doc["partitions"]), configs)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise FormatError(f"unreadable topic configuration record: {exc}", object_key=key) from None

    def same_as(self, other: TopicConfig | None) -> bool:
        return other is not None and (other.topic, other.partitions, other.configs) == (
            self.topic,
            self.partitions,
            self.configs,
        )

    @property
    def cleanup_policy(self) -> str:
        return self.configs.get("cleanup.policy", "delete")


SERIES = Series(CONFIG_DIR, CONFIG_EXTENSION, TopicConfig.from_bytes)


def creation_configs(recorded: TopicConfig | None, overrides: dict[str, str]) -> dict[str, str]:
    """The configs a created target gets: the recorded ones, ``topic.creation.default.*`` winning."""
    base = {k: v for k, v in (recorded.configs if recorded else {}).items() if k not in NOT_CARRIED}
    return {**base, **overrides}


def policy_warning(source_topic: str, recorded: TopicConfig, target: str, target_policy: str) -> str | None:
    """A warning when the existing target's cleanup.policy differs from the one recorded for the source."""
    if sorted(target_policy.split(",")) == sorted(recorded.cleanup_policy.split(",")):
        return None
    return (
        f"target topic {target!r} has cleanup.policy={target_policy} but the source {source_topic!r} had "
        f"cleanup.policy={recorded.cleanup_policy} when backed up: the restored topic will not behave as the source "
        f"(kafka-configs --alter --entity-type topics --entity-name {target} --add-config "
        f"cleanup.policy={recorded.cleanup_policy})"
    )
