"""DeviantArt's connector configuration (its ``connector.class``, ``s3.bucket``, ``s3.prefix``, ``s3.endpoint``,
``s3.path_style``, ``compressed_block_size``) and the defaults its own connector has (DA ``S3SinkConnector`` README's
table).

Its objects are always Block-GZIP (``format.class`` defaults to ``block_gzip``) and its prefix defaults to ``""``
(``s3.prefix``), not Confluent's ``topics``. Its keys are other names of ours (``s3.bucket`` → ``s3.bucket.name``,
``s3.prefix`` → ``topics.dir``, ``s3.endpoint`` → ``store.url``, ``s3.path_style`` →
``s3.path.style.access.enabled``), but ``compressed_block_size``, the Block-GZIP format's own property; its
``local.buffer.dir`` is accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from kafka_s3.core.config.model import ConfigDef, Importance, Prop, Range, Type

SINK_CLASS = "com.deviantart.kafka_connect_s3.S3SinkConnector"
#: ``compressed_block_size``: the uncompressed bytes of a Block-GZIP block
BLOCK_SIZE_KEY = "compressed_block_size"


def defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """A ConfigDef preprocessor: DeviantArt's defaults where its connector class is named and the keys are unset."""
    if raw.get("connector.class") != SINK_CLASS:
        return raw
    raw.setdefault("format.class", "block_gzip")
    if "s3.prefix" not in raw and "topics.dir" not in raw:
        raw["topics.dir"] = ""
    return raw


DEVIANTART = ConfigDef(
    "deviantart",
    unsupported={
        "local.buffer.dir": (
            "Uploads stream from memory and spill to temporary files on their own (DeviantArt's buffer)."
        ),
    },
    preprocessors=[defaults],
    aliases={
        "s3.bucket": "s3.bucket.name",
        "s3.endpoint": "store.url",
        "s3.prefix": "topics.dir",
        "s3.path_style": "s3.path.style.access.enabled",
    },
).define(
    Prop(
        BLOCK_SIZE_KEY,
        Type.LONG,
        "67108864",
        "format.class=block_gzip: uncompressed bytes (record bytes plus line separators) after which the current "
        "gzip block closes and a new one starts; each block is listed in the <name>.index sidecar, so a reader "
        "can fetch one block with a ranged GET. DeviantArt's property name and default (64 MiB).",
        Importance.LOW,
        "S3",
        Range(1),
        origin="kafka-s3",
    ),
)
