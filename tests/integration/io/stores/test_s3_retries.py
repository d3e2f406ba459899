"""Retries through the fault proxy: what is retried, how often, what is logged, what is raised in the end."""

from __future__ import annotations

import logging

import pytest

from kafka_s3.core.errors import ObjectExistsError, StoreAccessDeniedError, StoreError

pytestmark = pytest.mark.integration

MiB = 1024 * 1024


def retry_warnings(caplog) -> list[str]:
    retries = [r for r in caplog.records if r.name == "kafka_s3.io.stores.retry"]
    assert all(r.levelno == logging.WARNING for r in retries)
    return [r.getMessage() for r in retries]


def test_two_503_then_success_is_two_logged_retries(open_s3, fault_proxy, caplog):
    store = open_s3(endpoint=fault_proxy.url)
    fault_proxy.fail(503, times=2, method="PUT", path="slow.bin")

    with caplog.at_level(logging.WARNING):
        store.put("slow.bin", b"payload")

    assert [r.fault for r in fault_proxy.requests("PUT", path="slow.bin")] == ["status", "status", None]
    warnings = retry_warnings(caplog)
    assert len(warnings) == 2
    assert warnings[0].startswith(
        f"put_object {store.url}/slow.bin failed (HTTP 503 SlowDown: injected by the fault proxy); retry 1 of 3"
    )
    assert warnings[1].startswith(f"put_object {store.url}/slow.bin failed (HTTP 503 SlowDown")
    assert "retry 2 of 3" in warnings[1]
    assert store.get("slow.bin") == b"payload"


def test_500_more_times_than_the_retries_is_a_store_error(open_s3, fault_proxy, caplog):
    store = open_s3({"s3.part.retries": "2"}, endpoint=fault_proxy.url)
    fault_proxy.fail(500, times=10, method="GET", path="broken.bin")
    store.put("broken.bin", b"x")

    with caplog.at_level(logging.WARNING), pytest.raises(StoreError) as caught:
        store.get("broken.bin")

    assert str(caught.value) == (
        f"get_object {store.url}/broken.bin failed: HTTP 500 InternalError: injected by the fault proxy "
        "(gave up after 3 attempts)"
    )
    assert len(fault_proxy.requests("GET", path="broken.bin")) == 3
    assert len(retry_warnings(caplog)) == 2


def test_a_connection_reset_is_retried(open_s3, fault_proxy, caplog):
    store = open_s3(endpoint=fault_proxy.url)
    fault_proxy.reset(times=1, method="PUT", path="reset.bin")
    fault_proxy.reset(times=1, method="GET", path="reset.bin")

    with caplog.at_level(logging.WARNING):
        store.put("reset.bin", b"survives")
        assert store.get("reset.bin") == b"survives"

    assert [r.fault for r in fault_proxy.requests(path="reset.bin")] == ["reset", None, "reset", None]
    assert len(retry_warnings(caplog)) == 2


def test_403_is_not_retried(open_s3, fault_proxy, caplog):
    store = open_s3(endpoint=fault_proxy.url)
    store.put("forbidden.bin", b"x")
    fault_proxy.fail(403, times=5, method="GET", path="forbidden.bin")

    with caplog.at_level(logging.WARNING), pytest.raises(StoreAccessDeniedError):
        store.get("forbidden.bin")

    assert len(fault_proxy.requests("GET", path="forbidden.bin")) == 1
    assert retry_warnings(caplog) == []


def test_412_is_not_retried(open_s3, fault_proxy):
    store = open_s3(endpoint=fault_proxy.url)
    store.put("taken.bin", b"x")

    with pytest.raises(ObjectExistsError):
        store.put("taken.bin", b"y")

    assert len(fault_proxy.requests("PUT", path="taken.bin")) == 2  # the first put, then one refused attempt


def test_a_failed_part_is_sent_again_and_the_object_is_whole(open_s3, fault_proxy):
    store = open_s3({"s3.part.size": str(5 * MiB)}, endpoint=fault_proxy.url)
    fault_proxy.fail(503, times=1, method="PUT", query="partNumber=1")
    fault_proxy.reset(times=1, method="PUT", query="partNumber=2")
    fault_proxy.fail(500, times=1, method="POST", query="uploadId")
    data = bytes(range(256)) * (12 * MiB // 256)

    store.put("parts.bin", data)

    assert len(fault_proxy.requests("PUT", query="uploadId")) == 5
    assert store.get("parts.bin") == data
