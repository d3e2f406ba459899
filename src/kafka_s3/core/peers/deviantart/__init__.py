"""DeviantArt's kafka-connect-s3 (DA = DeviantArt/kafka-connect-s3,
``src/main/java/com/deviantart/kafka_connect_s3/``)."""

from __future__ import annotations

from kafka_s3.core.config.deviantart import DEVIANTART, SINK_CLASS
from kafka_s3.core.peers.base import Peer, Registration
from kafka_s3.core.peers.deviantart.layout import claims

PEER = Peer(
    name="deviantart",
    short="DeviantArt",
    title="DeviantArt's connector",
    claims=claims,
    layout="kafka_s3.core.peers.deviantart.layout:DeviantArtLayout",
    sink_classes=(SINK_CLASS,),
    config=DEVIANTART,
    formats=(
        Registration(
            "block_gzip",
            "kafka_s3.core.formats.block_gzip:BlockGzipFormat",
            aliases=(
                "com.deviantart.kafka_connect_s3.BlockGZIPFormat",
                "com.deviantart.kafka_connect_s3.BlockGZIPFileWriter",
                "BlockGZIPFormat",
                "block-gzip",
                "blockgzip",
            ),
        ),
    ),
)
