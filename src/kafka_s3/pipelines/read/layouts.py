"""Which layout the configured prefix holds (``restore.layout=auto``), decided once on the driver.

The keys under ``topics.dir`` are listed and told apart by :func:`kafka_s3.core.layouts.detection.detect`; the
result is written back into the configuration as ``restore.layout=<name>``, so every task (which rebuilds its
:class:`~kafka_s3.pipelines.read.plugins.ReadPlugins` from the configuration) reads with the same layout.
"""

from __future__ import annotations

import logging

from kafka_s3.core.config.model import Config
from kafka_s3.core.layout import Layout
from kafka_s3.core.layouts.detection import AUTO, Detection, detect
from kafka_s3.core.store import Store

log = logging.getLogger("kafka_s3.read")


def detected(config: Config, store: Store) -> tuple[Config, Detection]:
    """The configuration with ``restore.layout`` set to the layout found under its prefix, and what was found.

    ``restore.layout`` other than ``auto`` skips the listing. A prefix that holds nothing recognisable keeps
    ``auto`` (read as configured: the standard layout)."""
    choice = config.get("restore.layout", AUTO)
    if choice != AUTO:
        return config, Detection(choice, detected=False)
    layout = Layout.from_config(config)
    prefix = layout.topic_prefix()
    where = f"{store.url}/{prefix}" if prefix else str(store.url)
    keys = (info.key for info in store.list(prefix))
    detection = detect(keys, prefix, layout.directory_delim, layout.file_delim, where)
    log.info("%s", detection.describe())
    if detection.name is None:
        return config, detection
    return config.replace(restore__layout=detection.name), detection
