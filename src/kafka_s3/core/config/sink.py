"""The backup (sink) connector's properties: Confluent's S3 sink, plus kafka-s3's own (marked in the reference), plus
what the peers bring (``kafka_s3.core.peers``: their properties, property names, statements and checks)."""

from __future__ import annotations

import re

from kafka_s3.core.config.common import FORMAT, KAFKA, PARTITIONER, PASSTHROUGH, STORAGE, UNSUPPORTED
from kafka_s3.core.config.iceberg import ICEBERG, ICEBERG_SINK_CLASSES
from kafka_s3.core.config.metrics_props import METRICS
from kafka_s3.core.config.model import (
    REQUIRED,
    Check,
    Config,
    ConfigDef,
    Importance,
    OneOf,
    Prop,
    Range,
    Type,
    require_one_of,
)
from kafka_s3.core.config.registries import peers
from kafka_s3.core.config.restore_props import RESTORE_PROPS, SCHEMAS_REGISTRY_URL
from kafka_s3.core.errors import ConfigError

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
MiB = 1024 * 1024

#: kafka-s3's own sink class; the peers' sink classes (Confluent's, Lenses', DeviantArt's) come from their registry
OWN_SINK_CLASSES = ("kafka_s3.pipelines.backup.driver",)


def sink_connector_classes() -> tuple[str, ...]:
    """Every ``connector.class`` a backup runs: the peers' sinks', kafka-s3's own and Apache Iceberg's sink (a backup
    into Iceberg tables)."""
    classes: tuple[str, ...] = peers().sink_classes()
    return classes + OWN_SINK_CLASSES + ICEBERG_SINK_CLASSES


def _regex_error(value: str) -> str | None:
    try:
        re.compile(value)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None


def _check_sink(config: Config) -> None:
    connector = config.get("connector.class") or ""
    if connector and connector not in sink_connector_classes():
        raise ConfigError(
            f"connector.class={connector!r} is not a sink connector kafka-s3 runs as a backup "
            f"(allowed: {', '.join(peers().DEFAULT.sink_classes)})",
            key="connector.class",
        )
    part_size = config["s3.part.size"]
    if part_size < 5 * MiB:
        raise ConfigError(
            f"Invalid value {part_size} for configuration s3.part.size: must be at least 5242880 (5 MiB), the S3 "
            "minimum part size",
            key="s3.part.size",
        )
    if (
        config["rotate.schedule.interval.ms"] > 0
        and config["rotate.schedule.anchor"] == "day"
        and not config["timezone"]
    ):
        raise ConfigError(
            "rotate.schedule.interval.ms is set but timezone is empty: scheduled rotation aligns to the clock of a "
            "time zone (set e.g. timezone=UTC)",
            key="timezone",
        )
    peers().check_sink(config)  # the sink peer's own (Lenses: what its layout holds)
    partitioner = config["partitioner.class"]
    if partitioner == "field" and not config["partition.field.name"]:
        raise ConfigError("partitioner.class=FieldPartitioner needs partition.field.name", key="partition.field.name")
    if partitioner == "time_based":
        if config["partition.duration.ms"] <= 0:
            raise ConfigError(
                "partitioner.class=TimeBasedPartitioner needs partition.duration.ms > 0", key="partition.duration.ms"
            )
        if not config["path.format"]:
            raise ConfigError("partitioner.class=TimeBasedPartitioner needs path.format", key="path.format")
    if partitioner in ("time_based", "daily", "hourly") and not config["timezone"]:
        raise ConfigError(
            f"partitioner.class={partitioner} needs timezone (e.g. timezone=UTC), as Confluent's partitioner does",
            key="timezone",
        )
    if partitioner in ("time_based", "daily", "hourly") and not config["locale"]:
        raise ConfigError(
            f"partitioner.class={partitioner} needs locale (e.g. locale=en-US), as Confluent's partitioner does",
            key="locale",
        )
    if partitioner in ("time_based", "daily", "hourly") and config["timestamp.extractor"] == "Wallclock":
        rotation = " and rotate.interval.ms cuts" if config["rotate.interval.ms"] > 0 else ""
        config.warnings.append(
            f"timestamp.extractor=Wallclock with partitioner.class={partitioner} is not exactly-once: directories"
            f"{rotation} follow the time of the backup, not the records, so a re-run after a failure can write the "
            "same records again under other object names (Confluent documents the same). Use timestamp.extractor="
            "Record or RecordField for an exactly-once backup"
        )


SINK = ConfigDef(
    "backup (sink)",
    home=f"{__name__}:SINK",
    unsupported=dict(UNSUPPORTED),
    passthrough_prefixes=PASSTHROUGH,
    checks=[require_one_of("topics", "topics.regex"), _check_sink],
)
SINK.define(
    Prop(
        "name",
        Type.STRING,
        REQUIRED,
        "Unique name of the backup; the consumer group is connect-<name> unless group.id is set.",
        H,
        "Connector",
    ),
    Prop(
        "connector.class",
        Type.STRING,
        "io.confluent.connect.s3.S3SinkConnector",
        "Accepted for compatibility: io.confluent.connect.s3.S3SinkConnector.",
        L,
        "Connector",
    ),
    Prop(
        "tasks.max",
        Type.INT,
        "1",
        "Accepted for compatibility. Parallelism comes from Spark: a cycle runs at most two tasks per Spark core, "
        "each backing up its share of the topic-partitions, up to 4 at a time (one task per partition when there are "
        "fewer; a partition is never split).",
        L,
        "Connector",
        Range(1),
    ),
    Prop("topics", Type.LIST, "", "Topics to back up (comma-separated).", H, "Connector"),
    Prop(
        "topics.regex",
        Type.STRING,
        "",
        "Regular expression selecting the topics to back up (the whole topic name must match).",
        H,
        "Connector",
        Check(_regex_error, "a regular expression"),
    ),
    Prop(
        "group.id",
        Type.STRING,
        "",
        "Consumer group where backed-up offsets are committed. Default connect-<name>, as Kafka Connect names it.",
        M,
        "Connector",
        origin="kafka-s3",
    ),
    Prop(
        "flush.size",
        Type.INT,
        REQUIRED,
        "Number of records written to an object before it is committed (all open objects of a topic-partition "
        "commit together).",
        H,
        "Connector",
        Range(1),
    ),
    Prop(
        "rotate.interval.ms",
        Type.LONG,
        "-1",
        "Maximum span of record time (from the timestamp extractor) in one file; the file commits when a record "
        "falls outside it. Applies with time-based partitioners, as in Confluent. -1 disables.",
        H,
        "Connector",
        Range(-1),
    ),
    Prop(
        "rotate.schedule.interval.ms",
        Type.LONG,
        "-1",
        "Commit open files on a wall-clock schedule aligned in timezone (not exactly-once). -1 disables.",
        M,
        "Connector",
        Range(-1),
    ),
    Prop(
        "rotate.schedule.anchor",
        Type.STRING,
        "day",
        "What rotate.schedule.interval.ms counts from: day (Confluent's: multiples of the interval from local "
        "midnight in timezone) or open (Lenses' flush.interval: the interval since the chunk opened, on the wall "
        "clock; no timezone needed). A Lenses sink configuration sets open.",
        L,
        "Connector",
        OneOf(("day", "open")),
        origin="kafka-s3",
    ),
    Prop(
        "rotate.size.bytes",
        Type.LONG,
        "-1",
        "Commit open files once the records written since the last commit reach this many bytes (sum of key, "
        "value and header sizes: deterministic, close to the object size before compression). -1 disables.",
        M,
        "Connector",
        Range(-1),
        origin="kafka-s3",
    ),
    Prop(
        "filename.offset.zero.pad.width",
        Type.INT,
        "10",
        "Width to zero-pad offsets in object names, so names sort lexicographically.",
        L,
        "Connector",
        Range(0),
    ),
    Prop(
        "s3.part.size",
        Type.INT,
        str(25 * MiB),
        "Part size of multipart uploads; an open object holds at most one part in memory (the rest spills to disk).",
        H,
        "S3",
        Range(5 * MiB, 2**31 - 1),
    ),
    Prop(
        "behavior.on.null.values",
        Type.STRING,
        "fail",
        "What to do with null values (tombstones) when store.envelope=false: fail, ignore (skip), or write (as "
        "Confluent does: needs store.kafka.keys=true; keys and headers sidecars only, in the directory "
        "tombstone.encoded.partition, no value object). Envelope mode always stores them.",
        L,
        "Connector",
        OneOf(("fail", "ignore", "write")),
    ),
    Prop(
        "s3.object.tagging",
        Type.BOOLEAN,
        "false",
        "Tag objects with startOffset, endOffset and recordCount.",
        L,
        "S3",
    ),
    Prop(
        "s3.object.tagging.extra",
        Type.LIST,
        "",
        "Extra tags as key:value pairs added to every object (with s3.object.tagging=true).",
        L,
        "S3",
    ),
    Prop(
        "max.records.per.partition.per.cycle",
        Type.LONG,
        "1000000",
        "Records read from one topic-partition per backup cycle, which bounds a cycle's latency. Objects still "
        "close only by the rotation rules: the chunk open at the cap is completed in the same cycle (chunks never "
        "span cycles), so a cycle may read past the cap up to the end of that chunk.",
        M,
        "kafka-s3",
        Range(1),
        origin="kafka-s3",
    ),
    Prop(
        "cycle.interval.ms",
        Type.LONG,
        "10000",
        "In --follow mode, time between backup cycles (each cycle is one Spark job). Offsets are committed at the end "
        "of every cycle, like Connect's offset.flush.interval.ms.",
        M,
        "kafka-s3",
        Range(0),
        origin="kafka-s3",
    ),
    Prop(
        "backup.retention.ms",
        Type.LONG,
        "-1",
        "Retention of the backup itself: at the end of each cycle the backup removes its chunks whose records are all "
        "older than this, as kafka-s3 prune --older-than does (whole chunks, oldest first, never the newest; the "
        "removal is recorded in the bucket, so verify, restore and read start after it). -1 keeps everything.",
        M,
        "kafka-s3",
        Range(-1),
        origin="kafka-s3",
    ),
    Prop(
        "backup.retention.bytes",
        Type.LONG,
        "-1",
        "Retention of the backup itself, per partition as Kafka's retention.bytes: at the end of each cycle the "
        "backup removes a partition's oldest chunks until its chunks hold at most this many bytes, as kafka-s3 prune "
        "--max-total-bytes does. -1 keeps everything.",
        M,
        "kafka-s3",
        Range(-1),
        origin="kafka-s3",
    ),
    Prop(
        "compact.target.bytes",
        Type.LONG,
        "67108864",
        "kafka-s3 compact merges consecutive small committed chunks of a partition into objects of up to this many "
        "bytes (the merged chunks' stored bytes; a chunk at least this big is left as it is). -1: no byte limit "
        "(compact.target.records must then be set).",
        M,
        "kafka-s3",
        Range(-1),
        origin="kafka-s3",
    ),
    Prop(
        "compact.target.records",
        Type.LONG,
        "-1",
        "kafka-s3 compact merges consecutive small committed chunks of a partition into objects of up to this many "
        "records (with compact.target.bytes, whichever is reached first). -1: no record limit.",
        M,
        "kafka-s3",
        Range(-1),
        origin="kafka-s3",
    ),
    Prop(
        "isolation.level",
        Type.STRING,
        "read_committed",
        "Back up only committed transactional records (read_committed) or everything (read_uncommitted).",
        L,
        "Kafka",
        OneOf(("read_committed", "read_uncommitted")),
        origin="kafka-s3",
    ),
    Prop(
        "upload.buffer.memory.bytes",
        Type.LONG,
        str(32 * MiB),
        "Bytes an open object keeps in memory (its part being filled) before the part spills to a local temporary "
        "file; also bounded by upload.buffer.memory.total.bytes.",
        L,
        "kafka-s3",
        Range(0),
        origin="kafka-s3",
    ),
    Prop(
        "upload.buffer.memory.total.bytes",
        Type.LONG,
        str(64 * MiB),
        "Bytes all open objects of one Spark worker keep in memory together before pending parts spill to local "
        "temporary files (bounds memory when a partitioner keeps thousands of objects open; the default holds two "
        "default-sized parts of one object, so a backup with few open objects does not spill).",
        L,
        "kafka-s3",
        Range(0),
        origin="kafka-s3",
    ),
    Prop(
        "backup.consumer.groups.enable",
        Type.BOOLEAN,
        "true",
        "Each cycle, record the committed offsets of the consumer groups reading the backed-up topics (a snapshot "
        "object per topic whenever they changed, next to the chunk manifests), so that restore --consumer-groups can "
        "translate them to the target's offsets.",
        M,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "backup.consumer.groups.regex",
        Type.STRING,
        ".*",
        "Which consumer groups backup.consumer.groups.enable records (full match); the backup's own group never.",
        M,
        "kafka-s3",
        Check(_regex_error, "a regular expression"),
        origin="kafka-s3",
    ),
    SCHEMAS_REGISTRY_URL,
    Prop(
        "store.allow.unconditional.puts",
        Type.BOOLEAN,
        "false",
        "Back up to a store that ignores conditional puts (If-None-Match: *), which each backup checks once before "
        "writing. By default such a store is an error: re-runs or concurrent backups could replace stored objects "
        "and chunk manifests, so exactly-once does not hold. true: warn and back up anyway.",
        L,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "parquet.row.group.bytes",
        Type.LONG,
        str(16 * MiB),
        "Approximate uncompressed bytes buffered per Parquet row group.",
        L,
        "kafka-s3",
        Range(1024),
        origin="kafka-s3",
    ),
)
SINK.include(KAFKA).include(STORAGE).include(FORMAT).include(PARTITIONER).include(METRICS).include(ICEBERG)
for _peer in peers().PEERS:
    if _peer.config is not None:
        SINK.include(_peer.config)  # its properties, property names and configuration translation
# One file serves backup and restore: the restore's own keys are known here, without effect on a backup.
SINK.quiet.update(p.key for p in RESTORE_PROPS if p.key not in SINK.props)
