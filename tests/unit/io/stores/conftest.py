"""Fixtures of the store unit tests: parsed configurations and a local store in a temporary directory."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.io.stores.local import LocalStore
from kafka_s3.io.stores.spec import StoreSpec

BASE = {"name": "store-tests", "topics": "t", "flush.size": "1", "format.class": "bytearray", "s3.bucket.name": "b"}


@pytest.fixture
def sink_config():
    """``make(**settings)``: a parsed backup configuration (dotted keys given as a dict)."""

    def make(settings: dict[str, str] | None = None):
        return SINK.parse({**BASE, **(settings or {})})

    return make


@pytest.fixture
def local_store(tmp_path, sink_config):
    """A local store whose bucket directory exists."""
    store = StoreSpec.from_config(sink_config({"store.url": tmp_path.as_uri()}), environ={}).open()
    assert isinstance(store, LocalStore)
    store.create_bucket()
    return store
