"""The peers: the tools besides kafka-s3 whose buckets it reads and writes, one package each.

==============  ==============================================================================================
package         what it holds
==============  ==============================================================================================
``confluent``   Confluent's S3 sink and source, the default: its names and formats are kafka-s3's own
                (``core/layout.py``, ``core/formats``), so only its connector classes and how its names are told
                apart live here
``lenses``      Lenses' stream-reactor: KCQL (parser, translation into properties, Lenses' rules), its layout
                (names decided when an object closes, lock objects), its JSON, TEXT, BYTES, CSV, Avro and Parquet
                objects, its PARTITIONBY partitioner
``deviantart``  DeviantArt's kafka-connect-s3: its property names and defaults, its layout (upload-date
                directories, cursor objects), Block-GZIP with its index
==============  ==============================================================================================

Each package exposes one :class:`~kafka_s3.core.peers.base.Peer` as ``PEER``; :data:`PEERS` lists them, and the
functions below are what the configuration, the layout detection and the pipelines ask instead of naming a peer.
The configuration package sits below this one (the peers' layouts and formats use it), so it finds this registry by
import string (``kafka_s3.core.config.registries.PEERS``), as it finds the plugin registries; the format and
partitioner registries ask :func:`register_formats` and :func:`register_partitioners` for the peers' plugins when
first used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_s3.core.peers.base import Peer, Registration
from kafka_s3.core.peers.confluent import PEER as CONFLUENT
from kafka_s3.core.peers.deviantart import PEER as DEVIANTART
from kafka_s3.core.peers.lenses import PEER as LENSES

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.layout import Layout
    from kafka_s3.core.registry import Registry

__all__ = ["PEERS", "Peer", "Registration"]

#: every peer, in the order the layout detection tries them and their plugins are listed
PEERS: tuple[Peer, ...] = (CONFLUENT, LENSES, DEVIANTART)
#: the peer whose layout and formats are kafka-s3's own
DEFAULT = CONFLUENT


def named(name: str) -> Peer | None:
    """The peer called ``name`` (``restore.layout``'s value), if any."""
    return next((peer for peer in PEERS if peer.name == name), None)


def of_sink(config: Mapping[str, Any]) -> Peer | None:
    """The peer whose sink ``config``'s ``connector.class`` names (``None``: kafka-s3's own, or none)."""
    connector = config.get("connector.class")
    return next((peer for peer in PEERS if connector in peer.sink_classes), None)


def of_source(config: Mapping[str, Any]) -> Peer | None:
    """The peer whose source ``config``'s ``connector.class`` names."""
    connector = config.get("connector.class")
    return next((peer for peer in PEERS if connector in peer.source_classes), None)


def sink_classes() -> tuple[str, ...]:
    """Every peer's sink ``connector.class`` values: configurations a backup runs."""
    return tuple(name for peer in PEERS for name in peer.sink_classes)


def source_classes() -> tuple[str, ...]:
    """Every peer's source ``connector.class`` values: configurations of a restore."""
    return tuple(name for peer in PEERS for name in peer.source_classes)


def backup_layout(config: Config) -> Layout:
    """The layout a backup of ``config`` writes: its sink peer's own where that peer's layout holds the
    configuration (:meth:`Peer.writes_layout`), else the standard one (Confluent's names, kafka-s3's own)."""
    from kafka_s3.core.layout import Layout
    from kafka_s3.core.registry import import_object

    peer = of_sink(config)
    if peer is not None and peer.layout is not None and peer.writes_layout(config):
        layout: Layout = import_object(peer.layout).from_config(config)
        return layout
    return Layout.from_config(config)


def source_layout(config: Mapping[str, Any]) -> str | None:
    """The layout (its name) a peer's source configuration reads when ``restore.layout`` does not say: that peer's
    own (``None``: a configuration of no such peer, or of one whose layout is the standard one)."""
    peer = of_source(config)
    return peer.name if peer is not None and peer.layout is not None else None


def check_sink(config: Config) -> None:
    """The checks the sink peer of a backup configuration adds (its layout's limits, its warnings)."""
    peer = of_sink(config)
    if peer is not None and peer.check_sink is not None:
        peer.check_sink(config)


def split_statements(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One raw configuration per statement of raw settings (a peer's configuration may hold several: Lenses' KCQL);
    ``[dict(raw)]`` when they hold one."""
    configs = [dict(raw)]
    for peer in PEERS:
        if peer.split is not None:
            configs = [one for config in configs for one in peer.split(config)]
    return configs


def statement(config: Mapping[str, Any]) -> str:
    """The peer statement a configuration was made from (its KCQL statement), or ``""``."""
    for peer in PEERS:
        if peer.statement_key is not None and config.get(peer.statement_key):
            return str(config.get(peer.statement_key))
    return ""


def without_statements(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Raw settings without the peers' statements: the connection and store settings alone."""
    keys = {peer.statement_key for peer in PEERS if peer.statement_key is not None}
    return {key: value for key, value in raw.items() if key not in keys}


def register_formats(registry: Registry[Any]) -> None:
    """Register every peer's formats (``core/formats``' registry calls it when first used)."""
    for peer in PEERS:
        for plugin in peer.formats:
            registry.register(plugin.name, plugin.target, plugin.aliases)


def register_partitioners(registry: Registry[Any]) -> None:
    """Register every peer's partitioners (``core/partitioners``' registry calls it when first used)."""
    for peer in PEERS:
        for plugin in peer.partitioners:
            registry.register(plugin.name, plugin.target, plugin.aliases)
