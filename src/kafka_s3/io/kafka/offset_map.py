"""The restore's offset map, read back: which target offsets each source offset went to, as the restore recorded
them in the target cluster's offset-map topic (in the same transaction as its progress). ``restore
--consumer-groups`` translates the recorded groups' offsets with it."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError
from kafka_s3.core.groups import OffsetMap
from kafka_s3.io.kafka.denied import GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, lacks

MapKey = tuple[str, int, str, int]  # source topic, source partition, target topic, target partition
# librdkafka's default transaction.timeout.ms (60 s) and Kafka's 10 s check for timed-out transactions, with margin
OPEN_TRANSACTION_WAIT = 120.0


def read_offset_maps(
    settings: Mapping[str, str],
    topic: str,
    end: int,
    restore: str,
    identities: Mapping[MapKey, str],
    wait: float = OPEN_TRANSACTION_WAIT,
) -> dict[MapKey, OffsetMap]:
    """The offset maps the restore ``restore`` (its progress group prefix) recorded in ``topic`` under the
    identities given (committed records only, up to ``end``, the high watermark); a record marked ``reset`` starts
    its map over.

    Every restore writes its maps to the same partition, so a transaction another restore left open there holds back
    every map written after it. Reading only up to the last stable offset would then miss this restore's maps and
    put its groups at the target's end, past records they never read: it waits (``wait`` seconds) for that
    transaction to end, and is an error if it does not."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import KafkaError as RdKafkaError

    maps: dict[MapKey, OffsetMap] = {}
    if end <= 0:
        return maps
    consumer = Consumer(
        {
            **settings,
            "group.id": f"{restore}-offset-map-reader",
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + wait
        position = 0
        while position < end:
            if time.monotonic() > deadline:
                raise KafkaError(
                    f"reading the offset map {topic}[0] up to offset {end} stopped at offset {position} for "
                    f"{wait:g} s: a transaction open there holds the later records back (another restore running, "
                    "or one stopped inside a transaction, which Kafka aborts after its transaction.timeout.ms); no "
                    "group offsets were committed: run restore --consumer-groups again once it has ended"
                )
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                error = msg.error()
                if error is not None:
                    if error.code() == RdKafkaError._PARTITION_EOF:
                        position = max(position, msg.offset() or 0)
                        continue
                    if error.code() == GROUP_AUTHORIZATION_FAILED:  # the reader's coordinator lookup: it commits
                        continue  # nothing, so it needs no right on its group
                    if error.code() == TOPIC_AUTHORIZATION_FAILED:
                        raise KafkaAuthorizationError(
                            f"reading the offset map {topic}[0] was refused: {lacks(settings, 'READ', 'topic', topic)} "
                            "(restore --consumer-groups translates offsets with what the restore recorded there)"
                        )
                    raise KafkaError(f"reading the offset map {topic}[0] failed: {error.str()}")
                position = (msg.offset() or 0) + 1
                if position > end:
                    break
                doc = json.loads(msg.value() or b"{}")
                if not doc.get("restore", "").startswith(restore):
                    continue
                key = (doc["source_topic"], doc["source_partition"], doc["target_topic"], doc["target_partition"])
                if identities.get(key) != doc.get("identity"):
                    continue
                if doc.get("reset") or key not in maps:
                    maps[key] = OffsetMap()
                maps[key].extend([(int(a), int(b), int(c)) for a, b, c in doc["ranges"]])
    finally:
        consumer.close()
    return maps
