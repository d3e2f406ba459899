"""Confluent's S3 sink and its Backup and Restore S3 source: the default peer, whose names and formats are kafka-s3's
own (``core/layout.py``, ``core/formats``, ``core/partitioners``)."""

from __future__ import annotations

from kafka_s3.core.peers.base import Peer
from kafka_s3.core.peers.confluent.layout import claims

SINK_CLASSES = ("io.confluent.connect.s3.S3SinkConnector", "S3SinkConnector")
SOURCE_CLASSES = ("io.confluent.connect.s3.source.S3SourceConnector", "S3SourceConnector")

PEER = Peer(
    name="confluent",
    short="Confluent",
    title="Confluent's S3 sink",
    claims=claims,
    sink_classes=SINK_CLASSES,
    source_classes=SOURCE_CLASSES,
)
