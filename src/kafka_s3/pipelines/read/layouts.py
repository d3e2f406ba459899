"""Which layout and which formats the configured prefix holds, decided once on the driver.

The keys under ``topics.dir`` are listed once and told apart by :func:`kafka_s3.core.layouts.detection.detect`
(``restore.layout=auto``); the same names give the format, its compression and the sidecars' formats, and the first
data object whether it holds whole records (:mod:`kafka_s3.pipelines.read.detect_format`), where the configuration
does not set them. The results are written back into the configuration (``restore.layout=<name>``,
``format.class=...``, ``store.envelope=...``), so every task (which rebuilds its
:class:`~kafka_s3.pipelines.read.plugins.ReadPlugins` from the configuration) reads with the same settings. A setting
that contradicts what the bucket holds is a :class:`~kafka_s3.core.errors.ConfigError` before anything is read.
"""

from __future__ import annotations

import logging

from kafka_s3.core.config.model import Config
from kafka_s3.core.layout import Layout
from kafka_s3.core.layouts.detection import AUTO, OWN, Detection, detect
from kafka_s3.core.peers import DEFAULT
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.detect_format import Seen, envelope_of, found_formats, with_envelope

log = logging.getLogger("kafka_s3.read")

#: the layouts whose names are Confluent's (their extensions tell the format)
CONFLUENT_NAMES = (OWN, DEFAULT.name)


def detected(config: Config, store: Store) -> tuple[Config, Detection]:
    """The configuration with ``restore.layout`` set to the layout found under its prefix, the format settings the
    bucket gives where the configuration leaves them out, and what was found.

    ``restore.layout`` other than ``auto`` skips the listing unless ``format.class`` is not set. A prefix that holds
    nothing recognisable keeps ``auto`` (read as configured: the standard layout)."""
    choice = config.get("restore.layout", AUTO)
    layout = Layout.from_config(config)
    prefix = layout.topic_prefix()
    where = f"{store.url}/{prefix}" if prefix else str(store.url)
    seen = Seen(layout)
    if choice != AUTO:
        detection = Detection(choice, detected=False)
        if config["format.class"] or choice not in CONFLUENT_NAMES:
            return config, detection
        for info in store.list(prefix):
            seen.add(info)
    else:
        keys = (seen.add(info) for info in store.list(prefix))
        detection = detect(keys, prefix, layout.directory_delim, layout.file_delim, where)
        log.info("%s", detection.describe())
        if detection.name is not None:
            config = config.replace(restore__layout=detection.name)
    if detection.name not in (*CONFLUENT_NAMES, None):
        return config, detection  # a peer's layout: its configuration names its formats
    found = found_formats(config, seen, where)
    settings = dict(found.settings)
    if found.probe is not None:
        compression = settings.get("s3.compression.type", config["s3.compression.type"])
        envelope = envelope_of(store, found.probe, found.format_name, compression)
        settings.update(with_envelope(config, envelope, found.probe.key))
    if settings:
        found_here = ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items())
        level = logging.DEBUG if config["format.class"] else logging.INFO  # news when the configuration left it out
        log.log(level, "format: %s, found under %s", found_here, where)
        config = config.replace(**{key.replace(".", "__"): value for key, value in settings.items()})
    return config, detection
