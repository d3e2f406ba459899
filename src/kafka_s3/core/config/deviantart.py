"""DeviantArt's connector configuration (its ``connector.class``, ``s3.bucket``, ``s3.prefix``,
``compressed_block_size``): the defaults its own connector has (DA ``S3SinkConnector`` README's table).

Its objects are always Block-GZIP (``format.class`` defaults to ``block_gzip``) and its prefix defaults to ``""``
(``s3.prefix``), not Confluent's ``topics``. Its keys are aliases of ours (``s3.bucket`` → ``s3.bucket.name``,
``s3.prefix`` → ``topics.dir``, ``s3.endpoint`` → ``store.url``, ``s3.path_style``), declared with those properties.
"""

from __future__ import annotations

from typing import Any

from kafka_s3.core.config.model import ConfigDef

SINK_CLASS = "com.deviantart.kafka_connect_s3.S3SinkConnector"


def defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """A ConfigDef preprocessor: DeviantArt's defaults where its connector class is named and the keys are unset."""
    if raw.get("connector.class") != SINK_CLASS:
        return raw
    raw.setdefault("format.class", "block_gzip")
    if "s3.prefix" not in raw and "topics.dir" not in raw:
        raw["topics.dir"] = ""
    return raw


DEVIANTART = ConfigDef("deviantart", preprocessors=[defaults])
