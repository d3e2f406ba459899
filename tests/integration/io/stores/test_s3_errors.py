"""Failures a user meets first: missing bucket, wrong credentials, unreachable endpoint; creating the bucket."""

from __future__ import annotations

import socket
import uuid

import pytest

from kafka_s3.core.errors import BucketNotFoundError, StoreAccessDeniedError, StoreError
from kafka_s3.io.stores.spec import open_store

pytestmark = pytest.mark.integration


def missing_bucket_message(bucket: str, endpoint: str) -> str:
    return (
        f"bucket '{bucket}' does not exist at {endpoint}; buckets are never created implicitly: "
        f"run `kafka-s3 bucket create {bucket}`"
    )


@pytest.fixture
def missing_bucket_store(s3_config, s3_client, remove_bucket):
    bucket = "missing-" + uuid.uuid4().hex[:12]
    store = open_store(s3_config({"s3.bucket.name": bucket}))
    yield store, bucket
    store.close()
    if bucket in {b["Name"] for b in s3_client.list_buckets()["Buckets"]}:
        remove_bucket(bucket)


def test_every_operation_on_a_missing_bucket_says_how_to_create_it(missing_bucket_store, s3_env):
    store, bucket = missing_bucket_store
    operations = {
        "check": store.check,
        "put": lambda: store.put("k.bin", b"x"),
        "list": lambda: list(store.list("")),
        "get": lambda: store.get("k.bin"),
    }

    for name, operation in operations.items():
        with pytest.raises(BucketNotFoundError) as caught:
            operation()
        assert str(caught.value) == missing_bucket_message(bucket, s3_env["endpoint_url"]), name


def test_create_bucket_makes_check_pass_and_is_idempotent(missing_bucket_store):
    store, _ = missing_bucket_store

    store.create_bucket()
    store.check()
    store.create_bucket()
    store.put("k.bin", b"x")
    assert store.get("k.bin") == b"x"


def test_wrong_secret_is_access_denied_naming_the_key_id_but_not_the_secret(open_s3, s3_env):
    store = open_s3({"aws.secret.access.key": "not-the-right-secret-123"})

    for operation in (store.check, lambda: list(store.list("")), lambda: store.put("k.bin", b"x")):
        with pytest.raises(StoreAccessDeniedError) as caught:
            operation()
        message = str(caught.value)
        assert f"access key id '{s3_env['access_key']}'" in message
        assert "not-the-right-secret-123" not in message
        assert s3_env["secret_key"] not in message


def test_unknown_access_key_is_access_denied(open_s3):
    store = open_s3({"aws.access.key.id": "NOSUCHKEY", "aws.secret.access.key": "whatever-secret"})

    with pytest.raises(StoreAccessDeniedError, match=r"InvalidAccessKeyId"):
        list(store.list(""))


def test_unreachable_endpoint_is_a_store_error_naming_it(s3_config):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens there once the probe closes
    store = open_store(s3_config({"s3.part.retries": "1"}, endpoint=endpoint))

    try:
        with pytest.raises(StoreError) as caught:
            store.check()
    finally:
        store.close()

    assert type(caught.value) is StoreError
    assert str(caught.value).startswith(
        f"head_bucket s3://{store.spec.bucket}: cannot reach the object store at {endpoint}"
    )
    assert "(gave up after 2 attempts)" in str(caught.value)
