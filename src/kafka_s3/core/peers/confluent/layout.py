"""Confluent's S3 sink's names, told apart from other tools' (facts sheet A1).

Confluent's layout is kafka-s3's own: :class:`~kafka_s3.core.layout.Layout` builds and parses its names
(``<topics.dir>/<topic>/<encodedPartition>/<topic>+<partition>+<offset><ext>``, sidecars alike) and ``core/formats``
holds its formats. What is Confluent's alone is how a listing recognises its objects: a file named after the topic
its first directory names.
"""

from __future__ import annotations

import re

TOPIC = r"[A-Za-z0-9._-]+"


def claims(key: str, delim: str, file_delim: str) -> bool:
    """Whether Confluent's sink wrote ``key`` (relative to the prefix): ``<topic>/…/<topic><d><p><d><offset>.<ext>``."""
    parts = key.split(delim)
    if len(parts) < 2:
        return False
    d = re.escape(file_delim)
    match = re.match(rf"^({TOPIC}){d}\d+{d}\d+\.", parts[-1])
    return match is not None and match.group(1) == parts[0]
