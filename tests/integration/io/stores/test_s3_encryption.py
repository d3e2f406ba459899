"""Server-side encryption: the headers actually sent on each request, and what the server makes of them."""

from __future__ import annotations

import base64
import hashlib

import pytest

from kafka_s3.core.errors import StoreError

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
PART = 5 * MiB
CUSTOMER_KEY = bytes(range(32))
SSE = "x-amz-server-side-encryption"
SSE_C = {
    "x-amz-server-side-encryption-customer-algorithm": "AES256",
    "x-amz-server-side-encryption-customer-key": base64.b64encode(CUSTOMER_KEY).decode(),
    "x-amz-server-side-encryption-customer-key-md5": base64.b64encode(hashlib.md5(CUSTOMER_KEY).digest()).decode(),
}


def multipart_data() -> bytes:
    return bytes(range(256)) * ((PART + MiB) // 256)


def sse_c_headers(request) -> dict[str, str]:
    return {name: request.headers.get(name) for name in SSE_C}


def test_aes256_is_requested_on_put_and_on_multipart_creation(open_s3, fault_proxy):
    store = open_s3({"s3.part.size": str(PART), "s3.ssea.name": "AES256"}, endpoint=fault_proxy.url)
    data = multipart_data()

    store.put("small.bin", b"secret")
    store.put("large.bin", data)

    (put,) = fault_proxy.requests("PUT", path="small.bin")
    (create,) = fault_proxy.requests("POST", path="large.bin", query="uploads")
    parts = fault_proxy.requests("PUT", path="large.bin", query="uploadId")
    assert put.headers[SSE] == "AES256"
    assert create.headers[SSE] == "AES256"
    assert [SSE in part.headers for part in parts] == [False, False]  # S3 refuses SSE-S3 headers on parts
    assert store.get("small.bin") == b"secret"
    assert store.get("large.bin") == data


def test_kms_key_is_requested_and_a_refusal_is_a_clear_store_error(open_s3, fault_proxy):
    settings = {"s3.ssea.name": "aws:kms", "s3.sse.kms.key.id": "backup-key", "s3.part.retries": "0"}
    store = open_s3({"s3.part.size": str(PART), **settings}, endpoint=fault_proxy.url)

    # this SeaweedFS has no KMS configured: it answers the first request that stores bytes with a 500
    with pytest.raises(StoreError) as small:
        store.put("kms.bin", b"secret")
    with pytest.raises(StoreError) as large:
        store.put("kms-large.bin", multipart_data())

    assert str(small.value).startswith(f"put_object {store.url}/kms.bin failed: HTTP 500 InternalError")
    assert str(large.value).startswith(f"upload_part #1 {store.url}/kms-large.bin failed: HTTP 500 InternalError")
    (put,) = fault_proxy.requests("PUT", path="kms.bin")
    (create,) = fault_proxy.requests("POST", path="kms-large.bin", query="uploads")
    for request in (put, create):
        assert request.headers[SSE] == "aws:kms"
        assert request.headers[f"{SSE}-aws-kms-key-id"] == "backup-key"


def test_customer_key_goes_with_every_request_on_the_object(open_s3, fault_proxy):
    key_setting = {"s3.sse.customer.key": base64.b64encode(CUSTOMER_KEY).decode()}
    store = open_s3({"s3.part.size": str(PART), **key_setting}, endpoint=fault_proxy.url)
    data = multipart_data()

    store.put("small.bin", b"secret")
    store.put("large.bin", data)
    assert store.get("small.bin") == b"secret"
    assert store.head("large.bin").size == len(data)
    with store.open("large.bin") as file:
        file.seek(PART - 2)
        assert file.read(4) == data[PART - 2 : PART + 2]

    requests = fault_proxy.requests(path="small.bin") + fault_proxy.requests(path="large.bin")
    kinds = sorted({(r.method, "uploads" in r.query, "uploadId" in r.query) for r in requests})
    assert kinds == [
        ("GET", False, False),
        ("HEAD", False, False),
        ("POST", False, True),  # CompleteMultipartUpload
        ("POST", True, False),  # CreateMultipartUpload
        ("PUT", False, False),  # PutObject
        ("PUT", False, True),  # UploadPart
    ]
    assert all(sse_c_headers(r) == SSE_C for r in requests)
    assert all(SSE not in r.headers for r in requests)


def test_reading_a_customer_key_object_without_the_key_is_a_store_error(open_s3):
    encrypted = open_s3({"s3.sse.customer.key": base64.b64encode(CUSTOMER_KEY).decode()})
    encrypted.put("locked.bin", b"secret")

    with pytest.raises(StoreError, match=r"get_object s3://.*/locked.bin failed: HTTP 400 InvalidArgument"):
        open_s3().get("locked.bin")
