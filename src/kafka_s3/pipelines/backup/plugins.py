"""Plugin wiring for a backup: the converters, partitioner, formats, rotation policy and layout a configuration names,
built once per process (driver and every Spark worker) and validated before any job starts."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_s3.core import peers
from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Converter
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.formats.base import Format
from kafka_s3.core.layout import Layout
from kafka_s3.core.manifest import manifest_root
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.rotation import RotationPolicy


def _partitioners_without_headers() -> tuple[type, ...]:
    from kafka_s3.core.partitioners.default import DefaultPartitioner
    from kafka_s3.core.partitioners.field import FieldPartitioner
    from kafka_s3.core.partitioners.time_based import TimeBasedPartitioner

    return (DefaultPartitioner, FieldPartitioner, TimeBasedPartitioner)


@dataclass
class BackupPlugins:
    """Everything configured once per process: converters, partitioner, formats, rotation policy, layout."""

    config: Config
    layout: Layout
    value_converter: Converter
    key_converter: Converter
    partitioner: Partitioner
    value_format: Format
    keys_format: Format | None
    headers_format: Format | None
    policy: RotationPolicy
    envelope: bool
    null_behavior: str
    manifest_root: str
    tombstone_partition: str
    tagging: bool
    extra_tags: dict[str, str]
    compatibility: str = "NONE"  # schema.compatibility

    @classmethod
    def from_config(cls, config: Config) -> BackupPlugins:
        from kafka_s3.core import converters, formats, partitioners

        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
        key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
        envelope = config["store.envelope"]
        layout = peers.backup_layout(config)  # its sink peer's names (and cursor or lock objects) where they hold it
        # a peer's layout may have its own format (DeviantArt's writes only Block-GZIP), whatever format.class says
        format_class = layout.value_format or config["format.class"]
        value_format = formats.REGISTRY.resolve(format_class)(config, "value", value_converter, envelope)
        keys_format = (
            formats.REGISTRY.resolve(config["keys.format.class"])(config, "keys", key_converter)
            if config["store.kafka.keys"]
            else None
        )
        if config["behavior.on.null.values"] == "write" and not envelope and keys_format is None:
            # CS format/KeyValueHeaderRecordWriterProvider.write: "Key Writer must be configured when writing
            # tombstone records is enabled" (a tombstone is kept as its key and headers only)
            raise ConfigError(
                "behavior.on.null.values=write needs store.kafka.keys=true, as Confluent's sink does: a tombstone is "
                "kept as its key (and headers) in the tombstone.encoded.partition directory, with no value object",
                key="behavior.on.null.values",
            )
        headers_format = (
            formats.REGISTRY.resolve(config["headers.format.class"])(config, "headers")
            if config["store.kafka.headers"]
            else None
        )
        extra_tags = {}
        for pair in config["s3.object.tagging.extra"]:
            k, _, v = pair.partition(":")
            extra_tags[k.strip()] = v.strip()
        return cls(
            config=config,
            layout=layout,
            value_converter=value_converter,
            key_converter=key_converter,
            partitioner=partitioners.REGISTRY.resolve(config["partitioner.class"])(config),
            value_format=value_format,
            keys_format=keys_format,
            headers_format=headers_format,
            policy=RotationPolicy.from_config(config),
            envelope=envelope,
            null_behavior=config["behavior.on.null.values"],
            manifest_root=manifest_root(layout.topics_dir, value_format.extension, layout.directory_delim),
            tombstone_partition=config["tombstone.encoded.partition"],
            tagging=config["s3.object.tagging"],
            extra_tags=extra_tags,
            compatibility=config["schema.compatibility"],
        )

    @property
    def needs_values(self) -> bool:
        return not self.envelope or getattr(self.partitioner, "uses_values", False)

    @property
    def needs_headers(self) -> bool:
        """Whether any output reads record headers (the reader skips them otherwise, which is much cheaper)."""
        return (
            self.envelope
            or self.headers_format is not None
            or self.policy.rotate_size_bytes > 0
            or not isinstance(self.partitioner, _partitioners_without_headers())
        )

    @property
    def needs_timestamps(self) -> bool:
        from kafka_s3.core.partitioners.default import DefaultPartitioner
        from kafka_s3.core.partitioners.field import FieldPartitioner

        return (
            self.envelope
            or self.names_at_close  # names decided at close may hold the records' first and last timestamps
            or not isinstance(self.partitioner, (DefaultPartitioner, FieldPartitioner))
        )

    @property
    def names_at_close(self) -> bool:
        """Whether object names are known only when an object closes (the layout's ``names_at_close``): objects are
        staged first."""
        return self.layout.names_at_close
