"""Fixtures of the restore integration tests: back a topic up, then build restores of that backup.

``make_config``/``produce`` come from ``tests/integration/conftest.py``; ``spark``, ``fresh_bucket``, ``fresh_topic``
from ``tests/conftest.py``.
"""

from __future__ import annotations

import pytest

from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.restore.driver import Restore


def _props(properties: dict) -> dict:
    return {k.replace(".", "__"): v for k, v in properties.items()}


@pytest.fixture
def backup(engine, make_config):
    """``backup(bucket, topic, properties)`` → the backup summary (``Backup.run_once`` with dotted properties)."""

    def run(bucket: str, topic: str | list[str], properties: dict | None = None):
        _, sink = make_config(bucket, topic, **_props(properties or {}))
        return Backup(sink, engine=engine).run_once()

    return run


@pytest.fixture
def restorer(engine, make_config):
    """``restorer(bucket, topic, properties, options=None)`` → a :class:`Restore` of that backup on the shared
    session (``properties`` dotted, e.g. ``{"topic.rename": "a:b"}``)."""

    def make(
        bucket: str, topic: str | list[str], properties: dict | None = None, options: RestoreOptions | None = None
    ) -> Restore:
        _, source = make_config(bucket, topic, source=True, **_props(properties or {}))
        return Restore(source, engine, options)

    return make
