"""The restore (source) connector's properties: Confluent's Backup and Restore S3 source, plus kafka-s3's own.

A backup's own configuration file is accepted as is: sink-only keys are ignored quietly (they describe how the
objects were written, which the restore reads from the objects themselves).
"""

from __future__ import annotations

from kafka_s3.core.config.common import FORMAT, KAFKA, KCQL, PARTITIONER, PASSTHROUGH, STORAGE, UNSUPPORTED
from kafka_s3.core.config.deviantart import DEVIANTART
from kafka_s3.core.config.kcql import LENSES_SOURCE_CLASS
from kafka_s3.core.config.model import Config, ConfigDef
from kafka_s3.core.config.restore_props import RESTORE_PROPS
from kafka_s3.core.config.sink import OTHER_SINK_CLASSES, SINK
from kafka_s3.core.errors import ConfigError

SOURCE_CONNECTOR_CLASSES = (
    (
        "io.confluent.connect.s3.source.S3SourceConnector",
        "S3SourceConnector",
        "kafka_s3.pipelines.restore.driver",
        LENSES_SOURCE_CLASS,
    )
    + ("io.confluent.connect.s3.S3SinkConnector", "S3SinkConnector")
    + OTHER_SINK_CLASSES
)  # a backup's file restores its own data


def _check_source(config: Config) -> None:
    connector = config.get("connector.class") or ""
    if connector and connector not in SOURCE_CONNECTOR_CLASSES:
        raise ConfigError(
            f"connector.class={connector!r} cannot be restored by kafka-s3 (allowed: {SOURCE_CONNECTOR_CLASSES[0]} "
            "or a backup's own S3SinkConnector configuration)",
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
SOURCE.include(KAFKA).include(STORAGE).include(FORMAT).include(PARTITIONER).include(KCQL).include(DEVIANTART)
# A backup's configuration restores as is: the sink's own keys are known, not unknown.
SOURCE.quiet.update(key for key in SINK.props if key not in SOURCE.props)
