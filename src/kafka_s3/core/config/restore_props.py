"""The restore (source) connector's own properties (Confluent's Backup and Restore S3 source, plus kafka-s3's).

Apart from ``source.py`` so that the backup's definition can know them too: one file serves backup and restore, so a
backup takes a restore's keys quietly (and the restore a backup's), without either definition importing the other.
"""

from __future__ import annotations

from kafka_s3.core.config.model import Importance, OneOf, Prop, Range, Type
from kafka_s3.core.config.registries import peers

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW

OFFSET_MAP_TOPIC = "kafka-s3-offset-map"  # restore.offset.map.topic's default; backups leave that topic out
LEASE_TOPIC = "kafka-s3-restore-leases"  # restore.lease.topic's default; backups leave that topic out too
#: restore.layout's names besides auto and kafka-s3's own: the peers' (kafka_s3.core.peers)
_PEER_LAYOUTS: tuple[str, ...] = tuple(peer.name for peer in peers().PEERS)

# Both sides read it: the backup saves the subjects, restore --schemas registers them (one file serves both).
SCHEMAS_REGISTRY_URL = Prop(
    "schemas.registry.url",
    Type.STRING,
    "",
    "Schema Registry whose subjects the backup saves (<topic>-key, <topic>-value, their references: every "
    "version, id, type and the compatibility settings; default: the value or key converter's "
    "schema.registry.url), and the target registry restore --schemas registers them in.",
    Importance.MEDIUM,
    "kafka-s3",
    origin="kafka-s3",
)

RESTORE_PROPS = (
    Prop("name", Type.STRING, "kafka-s3-restore", "Name of the restore; names its progress group and transactions.", H),
    Prop(
        "connector.class",
        Type.STRING,
        "io.confluent.connect.s3.source.S3SourceConnector",
        "Accepted for compatibility.",
        L,
    ),
    Prop(
        "tasks.max",
        Type.INT,
        "0",
        "Restore tasks: N restores the source partitions in N tasks, each restoring its share one partition at a "
        "time; 0 lets Spark use every core: at most two tasks per core, each restoring up to 4 of its partitions at "
        "once.",
        M,
        "Connector",
        Range(0),
    ),
    Prop(
        "topics",
        Type.LIST,
        "",
        "Restore only these source topics (default: every topic found under topics.dir).",
        H,
    ),
    Prop(
        "transforms",
        Type.LIST,
        "",
        "Single message transforms, as Kafka Connect names them; RegexRouter "
        "(org.apache.kafka.connect.transforms.RegexRouter with regex and replacement) renames target topics.",
        M,
        "Transforms",
    ),
    Prop(
        "topic.rename",
        Type.LIST,
        "",
        "Target topic per source topic as source:target pairs (comma-separated), applied before transforms.",
        M,
        "Transforms",
        origin="kafka-s3",
    ),
    Prop(
        "behavior.on.error",
        Type.STRING,
        "fail",
        "On a bad object or record: fail (stop right before it; every record before it is restored and committed), "
        "ignore (skip it) or log (skip it and log it). Only what cannot be read is skipped: one JSON line, one "
        "Parquet row group or one Avro block when its records cannot be told apart; the summary lists each skip "
        "with its object key, position and offsets, and counts the skipped records.",
        M,
        "Connector",
        OneOf(("fail", "ignore", "log")),
    ),
    Prop(
        "exactly.once.support",
        Type.STRING,
        "requested",
        "required: transactional producer per task with progress committed atomically with the records; "
        "requested: the same when the broker supports transactions, else at-least-once; disabled: faster "
        "at-least-once with an idempotent producer.",
        H,
        "Connector",
        OneOf(("required", "requested", "disabled")),
    ),
    Prop(
        "topic.creation.enable",
        Type.BOOLEAN,
        "false",
        "Create missing target topics with the source partition count; topic.creation.default.replication.factor "
        "(default -1 = broker default) and any other topic.creation.default.<topic config> apply (set "
        "topic.creation.default.retention.ms=-1 to keep restored records older than the broker's default retention).",
        M,
        "Connector",
    ),
    Prop(
        "s3.poll.interval.ms",
        Type.LONG,
        "60000",
        "In --follow mode, how often the bucket is listed for new objects.",
        M,
        "S3",
        Range(0),
    ),
    Prop(
        "record.batch.max.size",
        Type.INT,
        "200",
        "Accepted for compatibility (Confluent's poll batch size); kafka-s3 batches by Arrow batches and transactions.",
        L,
        "Connector",
        Range(1),
    ),
    Prop(
        "restore.transaction.records",
        Type.LONG,
        "100000",
        "Records per producer transaction in exactly-once mode (progress is committed with each transaction).",
        L,
        "kafka-s3",
        Range(1),
        origin="kafka-s3",
    ),
    Prop(
        "restore.offset.map.topic",
        Type.STRING,
        OFFSET_MAP_TOPIC,
        "Topic of the target cluster (created when missing: 1 partition, kept forever) where each restore records, "
        "with its progress and in the same transaction, which target offsets its source offsets went to; "
        "restore --consumer-groups translates the groups' offsets with it. Empty: not recorded. A backup whose "
        "topics.regex matches it leaves it out.",
        M,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "restore.lease.topic",
        Type.STRING,
        LEASE_TOPIC,
        "Topic of the target cluster (created when missing: 1 partition, records kept a day) where each running "
        "restore holds its target topics: it claims them before creating or writing anything, renews the claim while "
        "it runs and releases it at its end, so a second restore into a target being restored (of this "
        "configuration or another) is refused, naming the first. Empty: no claim (exactly-once restores of one "
        "configuration are still fenced by their transactions).",
        M,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "restore.topic.configs",
        Type.BOOLEAN,
        "false",
        "Create missing target topics (topic.creation.enable) with the partition count and the topic configs the "
        "backup recorded for the source (cleanup.policy, retention.*, segment.*, ...); topic.creation.default.* "
        "still win. An existing target whose cleanup.policy differs from the source's gets a warning either way.",
        M,
        "kafka-s3",
        origin="kafka-s3",
    ),
    SCHEMAS_REGISTRY_URL,
    Prop(
        "restore.allow.same.topic",
        Type.BOOLEAN,
        "false",
        "Allow restoring into the very topic the data was backed up from while it is not empty "
        "(guards against the backup/restore feedback loop).",
        M,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "restore.layout",
        Type.STRING,
        "auto",
        "Whose object layout the bucket holds under topics.dir: auto (detected from the object names: kafka-s3, "
        f"{', '.join(_PEER_LAYOUTS[:-1])} or {_PEER_LAYOUTS[-1]}; a prefix mixing them is refused), or one of those "
        "names to skip the detection. Restore, verify, read and the DataFrame reader all use it; the plan says which "
        "layout it is.",
        M,
        "kafka-s3",
        OneOf(("auto", "kafka-s3", *_PEER_LAYOUTS)),
        origin="kafka-s3",
    ),
)
