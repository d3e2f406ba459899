"""The retry helper every Kafka call goes through (issue 13 item 2): fake callables raising the KafkaException
confluent-kafka raises, on a fake clock — pure logic, no broker."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError as RdKafkaError
from confluent_kafka import KafkaException

from kafka_s3.core.errors import KafkaError
from kafka_s3.io.kafka import retry


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def failing(codes: list[int], result: str = "ok", cost: float = 0.0, clock: FakeTime | None = None):
    """A callable raising KafkaException(code) for each code in turn, then returning ``result``."""
    calls: list[float] = []

    def attempt(remaining: float) -> str:
        calls.append(remaining)
        if clock is not None:
            clock.now += cost
        if len(calls) <= len(codes):
            raise KafkaException(RdKafkaError(codes[len(calls) - 1]))
        return result

    attempt.calls = calls  # type: ignore[attr-defined]
    return attempt


RETRIABLE = [
    RdKafkaError.NOT_COORDINATOR,
    RdKafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    RdKafkaError.COORDINATOR_NOT_AVAILABLE,
    RdKafkaError.LEADER_NOT_AVAILABLE,
    RdKafkaError.NOT_LEADER_FOR_PARTITION,  # NOT_LEADER_OR_FOLLOWER
    RdKafkaError.REQUEST_TIMED_OUT,
    RdKafkaError.UNKNOWN_TOPIC_OR_PART,
    RdKafkaError._NOENT,  # list offsets before a new partition's leader is known: "No leaders found"
    RdKafkaError.NOT_CONTROLLER,
    RdKafkaError.CONCURRENT_TRANSACTIONS,
    RdKafkaError.REBALANCE_IN_PROGRESS,
]


@pytest.mark.parametrize("code", RETRIABLE, ids=lambda c: RdKafkaError(c).name())
def test_each_retriable_code_is_retried_until_success(code):
    t = FakeTime()
    attempt = failing([code, code], clock=t)
    assert retry.call("read committed offsets of group 'g'", attempt, 30, sleep=t.sleep, clock=t.clock) == "ok"
    assert len(attempt.calls) == 3
    assert t.sleeps == [0.1, 0.2]  # exponential backoff


def test_librdkafka_retriable_flag_is_honoured():
    error = RdKafkaError(RdKafkaError._TRANSPORT, retriable=True)
    assert retry.retriable(KafkaException(error))
    assert not retry.retriable(KafkaException(RdKafkaError(RdKafkaError._TRANSPORT)))


def test_a_fatal_error_is_never_retried():
    error = RdKafkaError(RdKafkaError.NOT_COORDINATOR, fatal=True)
    assert not retry.retriable(KafkaException(error))


@pytest.mark.parametrize(
    "code",
    [RdKafkaError.TOPIC_AUTHORIZATION_FAILED, RdKafkaError.INVALID_PARTITIONS, RdKafkaError.TOPIC_ALREADY_EXISTS],
    ids=lambda c: RdKafkaError(c).name(),
)
def test_a_non_retriable_error_fails_at_once_naming_the_operation(code):
    t = FakeTime()
    attempt = failing([code], clock=t)
    with pytest.raises(KafkaError, match=r"^Kafka list offsets of topic-a\[0\] failed: ") as info:
        retry.call("list offsets of topic-a[0]", attempt, 30, sleep=t.sleep, clock=t.clock)
    assert "retriable" not in str(info.value)
    assert len(attempt.calls) == 1 and t.sleeps == []


def test_retries_stop_at_the_deadline_with_an_error_naming_operation_and_duration():
    t = FakeTime()
    attempt = failing([RdKafkaError.NOT_COORDINATOR] * 1000, cost=0.5, clock=t)
    with pytest.raises(KafkaError) as info:
        retry.call("read committed offsets of group 'connect-x'", attempt, 10, sleep=t.sleep, clock=t.clock)
    message = str(info.value)
    assert message.startswith("Kafka read committed offsets of group 'connect-x' failed: ")
    assert "a retriable error, still failing after" in message
    assert t.now <= 10.0 + 0.5  # never sleeps past the deadline (an attempt's own cost aside)
    assert max(t.sleeps) == retry.MAX_BACKOFF  # the backoff is capped
    # each attempt is told how much time is left, never more than the deadline allows
    assert attempt.calls[0] == 10 and all(a <= 10 for a in attempt.calls)
    assert attempt.calls == sorted(attempt.calls, reverse=True)


@pytest.mark.parametrize("code", [RdKafkaError.UNKNOWN_TOPIC_OR_PART, RdKafkaError._NOENT])
def test_an_unknown_topic_or_leader_is_retried_only_for_a_short_grace(code):
    t = FakeTime()
    attempt = failing([code] * 1000, clock=t)
    with pytest.raises(KafkaError, match="a retriable error, still failing"):
        retry.call("list offsets", attempt, 30, sleep=t.sleep, clock=t.clock)
    assert 1 < t.now <= retry.UNKNOWN_TOPIC_GRACE


def test_an_unknown_topic_is_not_retried_where_it_means_gone():
    t = FakeTime()
    attempt = failing([RdKafkaError.UNKNOWN_TOPIC_OR_PART], clock=t)
    with pytest.raises(KafkaError, match="^Kafka delete topic 'x' failed: "):
        retry.call("delete topic 'x'", attempt, 30, unknown_topic_grace=0, sleep=t.sleep, clock=t.clock)
    assert len(attempt.calls) == 1


def test_the_projects_own_errors_pass_through_untouched():
    def attempt(remaining: float) -> None:
        raise KafkaError("commit of group 'g' offsets failed for t[0]: x")

    with pytest.raises(KafkaError, match=r"^commit of group 'g' offsets failed for t\[0\]: x$"):
        retry.call("commit offsets", attempt, 30)


def test_other_exceptions_become_a_kafka_error_naming_the_operation():
    def attempt(remaining: float) -> None:
        raise RuntimeError("boom")

    with pytest.raises(KafkaError, match=r"^Kafka delete topic 't' failed: boom$"):
        retry.call("delete topic 't'", attempt, 30)


def test_a_call_still_running_after_the_stall_period_logs_what_it_waits_for(caplog, monkeypatch):
    """(The "No silent loss II" issue, item 5: a restore's transaction call stalled ten silent minutes.)"""
    import logging
    import time

    from kafka_s3.core import stall
    from kafka_s3.io.kafka import retry

    monkeypatch.setattr(stall, "STALL_LOG_S", 0.2)
    with caplog.at_level(logging.WARNING, logger="kafka_s3.io.kafka.retry"):
        retry.call("commit the transaction of orders[0]", lambda remaining: time.sleep(0.7), 5.0)
    seen = [r.getMessage() for r in caplog.records if "still waiting for" in r.getMessage()]
    assert seen and all("Kafka commit the transaction of orders[0]" in m for m in seen), caplog.text


def test_a_call_that_ignores_its_own_timeout_is_abandoned_naming_it(monkeypatch):
    """librdkafka's send_offsets_to_transaction can block past its timeout while the coordinator it waits for came
    back from a restart (librdkafka #5456): a restore then sat ten minutes in one call. The call is given its timeout
    plus HANG_GRACE_S, then abandoned with an error."""
    import threading

    monkeypatch.setattr(retry, "HANG_GRACE_S", 0.3, raising=False)
    release = threading.Event()

    def stuck(remaining: float) -> None:
        release.wait(20)  # far past the 0.5 s it was given

    try:
        with pytest.raises(KafkaError, match=r"send restore progress of t\[0\] to the transaction did not return"):
            retry.call("send restore progress of t[0] to the transaction", stuck, 0.5)
    finally:
        release.set()


def test_an_attempts_error_and_result_come_back_through_the_bound():
    assert retry.call("list offsets", lambda remaining: 42, 5.0) == 42
    with pytest.raises(KafkaError, match="Kafka list offsets failed: Broker: Configuration is invalid"):
        retry.call("list offsets", failing([RdKafkaError.INVALID_CONFIG], "x"), 5.0)
