"""The restore (source) connector's properties: Confluent's Backup and Restore S3 source, plus kafka-s3's own.

A backup's own configuration file is accepted as is: sink-only keys are ignored quietly (they describe how the
objects were written, which the restore reads from the objects themselves).
"""

from __future__ import annotations

from dataclasses import replace

from kafka_s3.core.config.common import FORMAT, KAFKA, PARTITIONER, PASSTHROUGH, STORAGE, UNSUPPORTED
from kafka_s3.core.config.iceberg import ICEBERG, ICEBERG_SINK_CLASSES
from kafka_s3.core.config.metrics_props import METRICS
from kafka_s3.core.config.model import Config, ConfigDef
from kafka_s3.core.config.registries import peers
from kafka_s3.core.config.restore_props import RESTORE_PROPS
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError

#: kafka-s3's own source class; the peers' source classes (Confluent's, Lenses') come from their registry
OWN_SOURCE_CLASSES = ("kafka_s3.pipelines.restore.driver",)


def source_connector_classes() -> tuple[str, ...]:
    """Every ``connector.class`` a restore takes: the peers' sources', kafka-s3's own, and the peers' sinks' (a
    backup's file restores its own data, an Iceberg sink's file its tables)."""
    registry = peers()
    classes: tuple[str, ...] = (
        registry.source_classes() + OWN_SOURCE_CLASSES + registry.sink_classes() + ICEBERG_SINK_CLASSES
    )
    return classes


def _check_source(config: Config) -> None:
    connector = config.get("connector.class") or ""
    if connector and connector not in source_connector_classes():
        raise ConfigError(
            f"connector.class={connector!r} cannot be restored by kafka-s3 (allowed: "
            f"{peers().DEFAULT.source_classes[0]} or a backup's own S3SinkConnector configuration)",
            key="connector.class",
        )
    for entry in config["topic.rename"]:
        if ":" not in entry:
            raise ConfigError(
                f"Invalid value {entry!r} in topic.rename: expected source:target pairs", key="topic.rename"
            )


SOURCE = ConfigDef(
    "restore (source)",
    home=f"{__name__}:SOURCE",
    unsupported=dict(UNSUPPORTED),
    passthrough_prefixes=PASSTHROUGH,
    checks=[_check_source],
)
SOURCE.define(*RESTORE_PROPS)
# What the objects hold is in the bucket: a restore, read and verify find it when the configuration leaves it out.
SOURCE.define(replace(FORMAT.props["format.class"], default=""))
SOURCE.include(KAFKA).include(STORAGE).include(FORMAT).include(PARTITIONER).include(METRICS).include(ICEBERG)
for _peer in peers().PEERS:
    if _peer.config is not None:
        SOURCE.include(_peer.config)  # its properties, property names and configuration translation
# A backup's configuration restores as is: the sink's own keys are known, not unknown.
SOURCE.quiet.update(key for key in SINK.props if key not in SOURCE.props)
