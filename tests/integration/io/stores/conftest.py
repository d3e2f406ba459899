"""Fixtures of the S3 store integration tests: configurations for the fresh bucket, opened stores, a fault proxy."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.io.stores.s3 import S3Store
from kafka_s3.io.stores.spec import open_store
from tests.support.faultproxy import FaultProxy


@pytest.fixture
def s3_config(s3_env, fresh_bucket):
    """``make(settings, endpoint=None)``: a parsed backup configuration for the fresh bucket, plus ``settings``."""

    def make(settings: dict[str, str] | None = None, endpoint: str | None = None):
        raw = {
            "name": "store-tests",
            "topics": "t",
            "flush.size": "1",
            "format.class": "bytearray",
            "s3.bucket.name": fresh_bucket,
            "store.url": endpoint or s3_env["endpoint_url"],
            "s3.region": s3_env["region"],
            "aws.access.key.id": s3_env["access_key"],
            "aws.secret.access.key": s3_env["secret_key"],
            "s3.retry.backoff.ms": "1",
            **(settings or {}),
        }
        return SINK.parse(raw)

    return make


@pytest.fixture
def open_s3(s3_config):
    """``open_(settings=None, endpoint=None)``: an S3Store on the fresh bucket, closed after the test."""
    stores: list[S3Store] = []

    def open_(settings: dict[str, str] | None = None, endpoint: str | None = None) -> S3Store:
        store = open_store(s3_config(settings, endpoint))
        assert isinstance(store, S3Store)
        stores.append(store)
        return store

    yield open_
    for store in stores:
        store.close()


@pytest.fixture
def fault_proxy(s3_env):
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        yield proxy
