"""The peers' registry (``kafka_s3.core.peers``): every peer's plugins resolve by their names, its connector classes
choose its layout, its names are detected as its own, and the configuration knows its classes and properties."""

from __future__ import annotations

import pytest

from kafka_s3.core import formats, partitioners, peers
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.layout import Layout
from kafka_s3.core.layouts.detection import LAYOUTS, detect
from kafka_s3.core.registry import import_object

BASE = {"name": "n", "topics": "t", "flush.size": "10", "s3.bucket.name": "b", "format.class": "json"}


def test_every_peer_is_listed_once_by_name_with_the_default_first():
    names = [peer.name for peer in peers.PEERS]

    assert names == ["confluent", "lenses", "deviantart"]
    assert peers.DEFAULT is peers.PEERS[0]
    assert all(peers.named(name) is peer for name, peer in zip(names, peers.PEERS, strict=True))


@pytest.mark.parametrize(
    "peer, registry",
    [(peer, formats.REGISTRY) for peer in peers.PEERS] + [(peer, partitioners.REGISTRY) for peer in peers.PEERS],
)
def test_a_peers_plugins_resolve_by_name_and_alias(peer, registry):
    plugins = peer.formats if registry is formats.REGISTRY else peer.partitioners
    for plugin in plugins:
        assert plugin.name in registry.names()
        assert registry.resolve(plugin.name) is import_object(plugin.target)
        assert all(registry.canonical(alias) == plugin.name for alias in plugin.aliases)


@pytest.mark.parametrize("peer", [peer for peer in peers.PEERS if peer.layout is not None])
def test_a_peers_layout_is_detected_by_its_name_and_read_by_its_reader(peer):
    kind = LAYOUTS[peer.name]

    assert (kind.short, kind.title, kind.claims, kind.reader) == (peer.short, peer.title, peer.claims, peer.layout)
    assert issubclass(import_object(peer.layout or ""), Layout)


@pytest.mark.parametrize(
    "key, name",
    [
        ("topics/orders/partition=0/orders+0+0000000000.json", "confluent"),
        ("topics/orders/0/000000000002_1577849400000_1577849400002.json", "lenses"),
        ("topics/2017-02-01/orders-00000-000000000000.gz", "deviantart"),
    ],
)
def test_each_peers_names_are_detected_as_its_own(key, name):
    assert detect([key], "topics/").name == name


def test_a_sink_configuration_writes_its_peers_layout():
    deviantart = SINK.parse({**BASE, "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector"})
    confluent = SINK.parse({**BASE, "connector.class": "io.confluent.connect.s3.S3SinkConnector"})

    assert type(peers.backup_layout(deviantart)).__name__ == "DeviantArtLayout"
    assert type(peers.backup_layout(confluent)) is Layout
    assert type(peers.backup_layout(SINK.parse(BASE))) is Layout


def test_the_configuration_takes_every_peers_connector_classes():
    for connector in peers.sink_classes():
        assert SINK.parse({**BASE, "connector.class": connector})["connector.class"] == connector
    for connector in peers.source_classes() + peers.sink_classes():
        assert SOURCE.parse({**BASE, "connector.class": connector})["connector.class"] == connector


def test_a_peers_properties_and_property_names_are_the_configurations():
    for peer in peers.PEERS:
        if peer.config is None:
            continue
        assert set(peer.config.props) <= set(SINK.props) and set(peer.config.props) <= set(SOURCE.props)
        assert peer.config.aliases.items() <= SINK.alias_map().items()
        assert all(p in SINK.preprocessors for p in peer.config.preprocessors)


def test_statements_split_label_and_leave_store_settings():
    raw = {
        **BASE,
        "connect.s3.kcql": "INSERT INTO b:p SELECT * FROM t1 STOREAS JSON; "
        "INSERT INTO b:p SELECT * FROM t2 STOREAS JSON",
    }

    configs = peers.split_statements(raw)

    assert [c["topics"] for c in configs] == ["t1", "t2"]
    assert [peers.statement(c) for c in configs] == [
        "INSERT INTO b:p SELECT * FROM t1 STOREAS JSON",
        "INSERT INTO b:p SELECT * FROM t2 STOREAS JSON",
    ]
    assert peers.split_statements(BASE) == [BASE] and peers.statement(BASE) == ""
    assert "connect.s3.kcql" not in peers.without_statements(raw)
