"""DeviantArt's kafka-connect-s3 (DA = DeviantArt/kafka-connect-s3,
``src/main/java/com/deviantart/kafka_connect_s3/``).

===============  ===================================================================================================
module           job
===============  ===================================================================================================
``config``       its connector class, property names and defaults, and ``compressed_block_size``
``layout``       its names: upload-date directories, ``<topic>-<p %05d>-<offset %012d>.gz``, the block index beside
                 each object, the cursor object; how a listing tells them apart
``block_gzip``   Block-GZIP: lines in gzip members cut by size, with an index of the members (a ranged GET reads one)
===============  ===================================================================================================
"""

from __future__ import annotations

from kafka_s3.core.peers.base import Peer, Registration
from kafka_s3.core.peers.deviantart.config import DEVIANTART, SINK_CLASS
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
            "kafka_s3.core.peers.deviantart.block_gzip:BlockGzipFormat",
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
