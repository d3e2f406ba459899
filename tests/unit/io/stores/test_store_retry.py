"""Confluent's retry semantics: which failures are retried, the backoff bounds, the 24 h cap, the warnings."""

from __future__ import annotations

import logging

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from kafka_s3.io.stores.retry import MAX_BACKOFF_MS, RetryPolicy, describe, is_transient


def client_error(status: int, code: str) -> ClientError:
    answer = {"Error": {"Code": code, "Message": "told so"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(answer, "PutObject")


class Script:
    """An operation that fails with the given errors, then returns "done"; counts its calls."""

    def __init__(self, *errors: Exception):
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def policy(retries: int = 3, backoff_ms: int = 200, draw: float = 0.5, slept: list | None = None) -> RetryPolicy:
    return RetryPolicy(retries, backoff_ms, random=lambda: draw, sleep=(slept if slept is not None else []).append)


@pytest.mark.parametrize(
    "retry, bound_ms", [(1, 200), (2, 400), (3, 800), (10, 102_400), (19, 52_428_800), (20, MAX_BACKOFF_MS)]
)
def test_max_backoff_matches_confluents_table(retry, bound_ms):
    assert policy().max_backoff_ms(retry) == bound_ms


def test_cap_is_24_hours_even_for_absurd_retry_numbers():
    assert MAX_BACKOFF_MS == 86_400_000
    assert policy().max_backoff_ms(2**31 - 1) == MAX_BACKOFF_MS
    assert policy(backoff_ms=2**62).max_backoff_ms(1) == MAX_BACKOFF_MS


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.999999])
def test_backoff_is_full_jitter_within_the_bound(draw):
    jitter = policy(draw=draw)

    for retry in (1, 2, 3, 4):
        waited = jitter.backoff_seconds(retry)
        assert 0.0 <= waited <= jitter.max_backoff_ms(retry) / 1000
        assert waited == pytest.approx(draw * 0.2 * 2 ** (retry - 1))


def test_zero_backoff_never_waits():
    assert policy(backoff_ms=0).backoff_seconds(5) == 0.0


def test_transient_failures_are_retried_with_growing_waits(caplog):
    slept: list[float] = []
    operation = Script(client_error(503, "SlowDown"), client_error(500, "InternalError"))

    with caplog.at_level(logging.WARNING, logger="kafka_s3.stores.retry"):
        assert policy(slept=slept).run("put_object", "topics/t/k.bin", operation) == "done"

    assert operation.calls == 3
    assert slept == [pytest.approx(0.1), pytest.approx(0.2)]
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 2
    assert "put_object topics/t/k.bin failed (HTTP 503 SlowDown: told so); retry 1 of 3" in messages[0]
    assert "retry 2 of 3" in messages[1]


def test_exhausted_retries_raise_the_last_error():
    slept: list[float] = []
    last = client_error(500, "InternalError")
    operation = Script(*[client_error(503, "SlowDown")] * 3, last)

    with pytest.raises(ClientError) as caught:
        policy(retries=3, slept=slept).run("get_object", "k", operation)

    assert caught.value is last
    assert operation.calls == 4
    assert len(slept) == 3


def test_zero_retries_means_one_attempt():
    operation = Script(client_error(503, "SlowDown"))

    with pytest.raises(ClientError):
        policy(retries=0).run("get_object", "k", operation)
    assert operation.calls == 1


@pytest.mark.parametrize(
    "error",
    [
        client_error(403, "AccessDenied"),
        client_error(403, "SignatureDoesNotMatch"),
        client_error(404, "NoSuchKey"),
        client_error(404, "NoSuchBucket"),
        client_error(412, "PreconditionFailed"),
        client_error(400, "InvalidArgument"),
        NoCredentialsError(),
        ValueError("a bug, not a network problem"),
    ],
)
def test_answers_and_bugs_are_not_retried(error):
    slept: list[float] = []
    operation = Script(error)

    with pytest.raises(type(error)):
        policy(slept=slept).run("put_object", "k", operation)

    assert operation.calls == 1
    assert slept == []
    assert not is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        client_error(500, "InternalError"),
        client_error(503, "SlowDown"),
        client_error(503, "ServiceUnavailable"),
        client_error(429, "TooManyRequests"),
        client_error(400, "RequestTimeout"),
        client_error(400, "Throttling"),
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
        ConnectionClosedError(endpoint_url="http://127.0.0.1:1"),
        ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
        ResponseStreamingError(error="reset"),
        ConnectionResetError(104, "Connection reset by peer"),
        TimeoutError("timed out"),
    ],
)
def test_server_errors_throttling_and_connection_failures_are_transient(error):
    assert is_transient(error)
    assert policy(slept=[]).run("op", "k", Script(error)) == "done"


def test_describe_names_status_code_and_message():
    assert describe(client_error(503, "SlowDown")) == "HTTP 503 SlowDown: told so"
    assert describe(ConnectionResetError("reset")) == "ConnectionResetError: reset"


def test_describe_skips_the_code_of_bodiless_answers():
    answer = {"Error": {"Code": "403", "Message": "Forbidden"}, "ResponseMetadata": {"HTTPStatusCode": 403}}
    bodiless = ClientError(answer, "HeadBucket")

    assert describe(bodiless) == "HTTP 403: Forbidden"


@pytest.mark.issue(13, item=4)
def test_a_failed_certificate_verification_is_not_retried_and_says_why():
    from botocore.exceptions import SSLError

    from kafka_s3.io.stores.retry import tls_verification_failure

    refused = SSLError(
        endpoint_url="https://s3.example/b",
        error="[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate "
        "(_ssl.c:1006)",
    )
    reset = SSLError(endpoint_url="https://s3.example/b", error="EOF occurred in violation of protocol (_ssl.c:2427)")

    assert tls_verification_failure(refused) == "certificate verify failed: unable to get local issuer certificate"
    assert not is_transient(refused)
    assert tls_verification_failure(reset) is None
    assert is_transient(reset)  # a broken handshake is an accident: retried
