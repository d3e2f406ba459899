"""The formats (and converters) a backup was written with, built once from its configuration for every reader."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, LayoutError
from kafka_s3.core.formats.base import LEGACY_INDEX_EXTENSION, Format
from kafka_s3.core.layout import Layout
from kafka_s3.core.manifest import Manifest, ManifestStore, manifest_root
from kafka_s3.core.store import Store


@dataclass
class ReadPlugins:
    """The formats a backup was written with, from its configuration."""

    config: Config
    layout: Layout
    value_format: Format
    keys_format: Format
    headers_format: Format
    envelope: bool
    #: ambiguous files each chunk manifest read so far lists (manifests never change once created), so a following
    #: restore reads each manifest once (:mod:`kafka_s3.pipelines.read.ambiguity`)
    manifest_cache: dict[str, Manifest] = field(default_factory=dict, repr=False, compare=False)  # they never change

    @classmethod
    def from_config(cls, config: Config) -> ReadPlugins:
        from kafka_s3.core import converters, formats

        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
        key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
        if "topic.rename" in config.definition.props:  # a restore: values go to the routed topics (their subjects)
            value_converter.route = key_converter.route = _lazy_router(config)
        envelope = config["store.envelope"]
        layout = layout_of(config)
        value_format = layout.value_format or config["format.class"]  # a peer's own format
        if not value_format:  # found in the bucket by pipelines.read.layouts.detected, which did not run or find it
            raise ConfigError(
                "format.class is not set and was not found in the bucket: set it to the format the backup was "
                "written with",
                key="format.class",
            )
        return cls(
            config=config,
            layout=layout,
            value_format=formats.REGISTRY.resolve(value_format)(config, "value", value_converter, envelope),
            keys_format=formats.REGISTRY.resolve(config["keys.format.class"])(config, "keys", key_converter),
            headers_format=formats.REGISTRY.resolve(config["headers.format.class"])(config, "headers"),
            envelope=envelope,
        )

    @property
    def stored_offsets(self) -> bool:
        """Whether the records read carry their offsets (envelope objects, and objects whose names hold their last
        offset) rather than being numbered from an object's start offset."""
        return self.envelope or self.layout.names_hold_last_offset

    @property
    def timestamps(self) -> str:
        """Where restored records' timestamps come from, as the plan and the summary say it."""
        if self.envelope:
            return "timestamps: as backed up (store.envelope=true)"
        return "timestamps: time of restore (store.envelope=false: objects keep no record timestamps)"

    def manifests(self, store: Store) -> ManifestStore:
        root = manifest_root(self.layout.topics_dir, self.value_format.extension, self.layout.directory_delim)
        return ManifestStore(store, root, self.layout.directory_delim)

    def extensions(self) -> dict[str, str]:
        data = self.value_format.extension
        extensions = {
            data: "data",
            ".keys" + self.keys_format.extension: "keys",
            ".headers" + self.headers_format.extension: "headers",
        }
        if self.value_format.index_extension is not None:
            extensions[".index" + self.value_format.index_extension] = "index"
            extensions[".index" + LEGACY_INDEX_EXTENSION] = "index"  # as earlier versions named it
        return extensions


def layout_of(config: Config) -> Layout:
    """The Layout class ``restore.layout`` names (its registered reader), else the standard one; with
    ``restore.layout=auto`` a peer's source configuration reads that peer's layout. A layout whose reader is not part
    of this version is refused by name rather than read as another tool's (which would find nothing)."""
    from kafka_s3.core.layouts.detection import AUTO, LAYOUTS
    from kafka_s3.core.peers import source_layout
    from kafka_s3.core.registry import import_object

    name = config.get("restore.layout", AUTO)
    if name == AUTO:
        name = source_layout(config) or AUTO
    kind = LAYOUTS.get(name)
    if kind is None or kind.reader is None:
        return Layout.from_config(config)
    try:
        cls = import_object(kind.reader)
    except (ImportError, AttributeError):
        raise LayoutError(
            f"{kind.short} layout: not readable by this version (the objects under topics.dir="
            f"{config.get('topics.dir', '')!r} follow {kind.title}'s layout; restore.layout={name})"
        ) from None
    layout: Layout = cls.from_config(config)
    return layout


def _lazy_router(config: Config) -> Callable[[str], str]:
    """The restore's topic routing, built when first needed (only converters naming things after topics use it)."""
    router: list[Callable[[str], str]] = []

    def route(topic: str) -> str:
        if not router:
            from kafka_s3.core.transforms import topic_router

            router.append(topic_router(config))
        return router[0](topic)

    return route
