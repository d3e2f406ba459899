"""What a peer is: another tool whose buckets kafka-s3 reads and writes byte for byte (Confluent's S3 sink, Lenses'
stream-reactor, DeviantArt's connector), described by one :class:`Peer` that its package exposes as ``PEER``.

Everything the rest of kafka-s3 asks about a peer goes through that object (``kafka_s3.core.peers``): which
``connector.class`` values are its sink's and source's, which layout its sink writes and how its names are told
apart from others', how its configuration translates into kafka-s3's properties, and which formats and partitioners
it registers. The heavy parts (layouts, formats, partitioners) are named by import string, so reading the registry
imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config, ConfigDef

#: (key relative to the prefix, directory delimiter, file delimiter) -> whether the peer's sink wrote it
Claim = Callable[[str, str, str], bool]


@dataclass(frozen=True)
class Registration:
    """A plugin a peer registers: its short name, its ``module:Class``, and the names its users' configurations give
    it (the peer's Java class names, its ``STOREAS`` words)."""

    name: str
    target: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Peer:
    """One peer: its names, its sink's layout, its configuration, its plugins."""

    #: ``restore.layout``'s value for its layout, and the detection's name
    name: str
    #: ``"Lenses"``: for "Lenses layout: not readable by this version"
    short: str
    #: ``"Lenses' stream-reactor"``: for the plan's layout line
    title: str
    #: tells its sink's object names from other tools' (by name alone: the keys are listed, never read)
    claims: Claim
    #: ``"module:Class"`` of the :class:`~kafka_s3.core.layout.Layout` naming its objects (``None``: the standard one)
    layout: str | None = None
    #: ``connector.class`` values of its sink: a backup of such a configuration writes its layout
    sink_classes: tuple[str, ...] = ()
    #: ``connector.class`` values of its source: a restore of such a configuration reads its layout
    source_classes: tuple[str, ...] = ()
    #: its properties, property names and configuration translation (preprocessors), part of the sink's and the
    #: source's definitions
    config: ConfigDef | None = None
    #: why a backup configuration of its sink class is *not* written in its layout (empty: it is); ``None``: always
    layout_blockers: Callable[[Mapping[str, Any]], list[str]] | None = None
    #: the checks of a backup configuration of its sink class (raise ``ConfigError``, or add ``config.warnings``)
    check_sink: Callable[[Config], None] | None = None
    #: raw settings → one raw configuration per statement, when the settings hold several (Lenses' KCQL)
    split: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = None
    #: the property holding its statements (a configuration's label; left out of settings used for the store only)
    statement_key: str | None = None
    #: the formats it registers (``core/formats``' registry)
    formats: tuple[Registration, ...] = ()
    #: the partitioners it registers (``core/partitioners``' registry)
    partitioners: tuple[Registration, ...] = ()

    def writes_layout(self, config: Mapping[str, Any]) -> bool:
        """Whether a backup of ``config`` (of its sink class) writes this peer's own layout."""
        return self.layout is not None and not (self.layout_blockers and self.layout_blockers(config))
