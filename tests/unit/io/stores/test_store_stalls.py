"""An object store that stops answering ends an operation within a bounded time, naming the endpoint (the "No
silent loss II" issue, item 5: a SeaweedFS frozen with SIGSTOP held one put for 4 x 60 s of read timeouts, then the
partition's retries began again, and ``backup --once`` had not ended after 14 minutes).

Timeouts and failed connections are retried only while the operation is within its stall budget; answers of the
store (5xx, throttling) keep Confluent's retry count and backoff. The "frozen store" is a loopback socket that
accepts connections and never answers.
"""

from __future__ import annotations

import socket
import threading

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from kafka_s3.core.errors import StoreError
from kafka_s3.io.stores import s3_client
from kafka_s3.io.stores.retry import RetryPolicy
from kafka_s3.io.stores.spec import StoreSpec


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Stalling:
    """An operation whose attempts each take ``seconds`` on ``clock`` and fail with ``error``."""

    def __init__(self, clock: Clock, seconds: float, error: Exception):
        self.clock, self.seconds, self.error = clock, seconds, error
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        self.clock.now += self.seconds
        raise self.error


def policy(clock: Clock, retries: int = 3, budget_s: float = 60.0) -> RetryPolicy:
    return RetryPolicy(retries, 200, random=lambda: 0.5, sleep=lambda s: None, clock=clock, stall_budget_s=budget_s)


@pytest.mark.parametrize(
    "error", [ReadTimeoutError(endpoint_url="http://s3:1/b/k"), ConnectTimeoutError(endpoint_url="http://s3:1/b/k")]
)
def test_no_retry_starts_once_timeouts_have_taken_the_stall_budget(error):
    clock = Clock()
    operation = Stalling(clock, 30.0, error)
    with pytest.raises(type(error)) as caught:
        policy(clock).run("put_object", "b/k", operation)
    assert operation.calls == 2  # 0-30 s, 30-60 s: a third attempt would start past the 60 s budget
    assert caught.value.retry_attempts == 2  # type: ignore[attr-defined]  # what the store's error reports


def test_quick_failures_keep_every_retry_within_the_budget():
    clock = Clock()
    operation = Stalling(clock, 0.01, ReadTimeoutError(endpoint_url="http://s3:1/b/k"))
    with pytest.raises(ReadTimeoutError):
        policy(clock).run("get_object", "b/k", operation)
    assert operation.calls == 4


def test_the_stores_answers_keep_confluents_retries_whatever_the_time():
    """Throttling answers are the store speaking, not stalling: ``s3.part.retries`` stays what it says."""
    clock = Clock()
    answer = ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")
    operation = Stalling(clock, 40.0, answer)
    with pytest.raises(ClientError):
        policy(clock).run("put_object", "b/k", operation)
    assert operation.calls == 4


class FrozenStore:
    """Accepts TCP connections and never answers a byte (a ``SIGSTOP``ped server)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_a_put_to_a_store_that_stopped_answering_fails_naming_the_endpoint(monkeypatch):
    """The real S3 client against a frozen endpoint, with the timeouts shrunk so the test is quick."""
    from kafka_s3.io.stores import s3

    monkeypatch.setattr(s3_client, "READ_TIMEOUT_S", 0.3)
    monkeypatch.setattr(s3, "STALL_BUDGET_S", 0.5)
    frozen = FrozenStore()
    try:
        spec = StoreSpec(
            store_class="s3",
            bucket="b",
            region="us-east-1",
            endpoint_url=frozen.endpoint,
            access_key_id="k",
            secret_access_key="s",
            retry_backoff_ms=1,
            part_retries=10,
        )
        store = spec.open()
        raised: list[BaseException] = []

        def put() -> None:
            try:
                store.put("topics/t/partition=0/t+0+0000000000.json", b"{}\n")
            except BaseException as exc:
                raised.append(exc)

        worker = threading.Thread(target=put, daemon=True)
        worker.start()
        worker.join(60)  # guards against a hang only: the budget ends the put long before
        assert not worker.is_alive(), "the put never ended"
    finally:
        frozen.close()
    assert len(raised) == 1 and isinstance(raised[0], StoreError), raised
    message = str(raised[0])
    assert frozen.endpoint in message and "did not answer" in message, message
    assert "t+0+0000000000.json" in message and "10 retries" not in message
