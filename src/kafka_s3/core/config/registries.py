"""Where each plugin kind's registry lives, as import strings.

Config declarations resolve plugin names through these lazily, so that loading a configuration never imports every
format, partitioner, converter or store (Spark workers stay lean) and the store registry, which lives in the I/O
layer, is found without the core importing it.
"""

from __future__ import annotations

FORMATS = "kafka_s3.core.formats:REGISTRY"
PARTITIONERS = "kafka_s3.core.partitioners:REGISTRY"
EXTRACTORS = "kafka_s3.core.partitioners:EXTRACTORS"
CONVERTERS = "kafka_s3.core.converters:REGISTRY"
STORES = "kafka_s3.io.stores:REGISTRY"
