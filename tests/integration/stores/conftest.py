"""Fixtures of the S3 store integration tests: configurations for the fresh bucket, opened stores, a fault proxy."""

from __future__ import annotations

import boto3
import pytest
from faultproxy import FaultProxy

from kafka_s3.config.sink import SINK
from kafka_s3.stores.s3 import S3Store
from kafka_s3.stores.spec import open_store

MiB = 1024 * 1024


def _remove_bucket(client, bucket: str) -> None:
    """Empty and delete a test bucket: SeaweedFS gives every bucket its own volume, and volume slots run out."""
    for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    client.delete_bucket(Bucket=bucket)


@pytest.fixture
def s3_config(s3_env, fresh_bucket, raw_s3):
    """``make(settings, endpoint=None)``: a parsed backup configuration for the fresh bucket, plus ``settings``.

    The bucket is removed after the test.
    """

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

    yield make
    _remove_bucket(raw_s3, fresh_bucket)


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


@pytest.fixture
def raw_s3(s3_env):
    """A plain boto3 client, to look at the bucket independently of the store under test."""
    client = boto3.client(
        "s3",
        endpoint_url=s3_env["endpoint_url"],
        aws_access_key_id=s3_env["access_key"],
        aws_secret_access_key=s3_env["secret_key"],
        region_name=s3_env["region"],
    )
    yield client
    client.close()


@pytest.fixture
def remove_bucket(raw_s3):
    """``remove_bucket(name)``: empty and delete a bucket a test created itself."""
    return lambda bucket: _remove_bucket(raw_s3, bucket)
