"""Where each plugin kind's registry lives, and the peers' registry, as import strings.

Config declarations resolve plugin names through these lazily, so that loading a configuration never imports every
format, partitioner, converter or store (Spark workers stay lean) and the store registry, which lives in the I/O
layer, is found without the core importing it. The peers (``kafka_s3.core.peers``) sit above this package: their
layouts, formats and configuration translations use it, and it asks them which connector classes, properties and
statements they bring (:func:`peers`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

FORMATS = "kafka_s3.core.formats:REGISTRY"
PARTITIONERS = "kafka_s3.core.partitioners:REGISTRY"
EXTRACTORS = "kafka_s3.core.partitioners:EXTRACTORS"
CONVERTERS = "kafka_s3.core.converters:REGISTRY"
STORES = "kafka_s3.io.stores:REGISTRY"
PEERS = "kafka_s3.core.peers"


def peers() -> ModuleType:
    """The peers' registry (:mod:`kafka_s3.core.peers`), imported when first asked for."""
    return importlib.import_module(PEERS)
