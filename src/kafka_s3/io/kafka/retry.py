"""Retriable means retried: one helper every Kafka call of the project goes through.

A Kafka cluster answers some requests with errors that mean "not now" — a coordinator still loading or moved
(``NOT_COORDINATOR``, ``COORDINATOR_LOAD_IN_PROGRESS``), a leader being elected (``LEADER_NOT_AVAILABLE``,
``NOT_LEADER_OR_FOLLOWER``), a request that timed out on the broker, a topic whose metadata has not reached every
broker yet. Apache Kafka gives them routinely right after start-up, after a topic's creation and during a leader
change. :func:`call` repeats such a call with exponential backoff until it succeeds or its deadline passes, then
raises a :class:`~kafka_s3.core.errors.KafkaError` naming the operation, the last error and how long it was retried.
Any other error is raised at once, as a :class:`KafkaError` naming the operation. A call still running after 30 s
logs what it waits for (:mod:`kafka_s3.core.stall`), and one that outlives its own timeout by ``HANG_GRACE_S`` is
abandoned with an error: librdkafka's transactional calls can block far past the timeout they are given while a
coordinator comes back from a restart (``send_offsets_to_transaction``: librdkafka issues #5456, #5511), and a
restore sat ten minutes in one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from kafka_s3.core.errors import Interrupted, KafkaError
from kafka_s3.core.stall import logged_wait

T = TypeVar("T")

log = logging.getLogger(__name__)

# Broker error codes (Kafka protocol numbers, as confluent_kafka.KafkaError names them) that mean "try again": the
# KafkaError objects of admin results and of some consumer calls carry them without librdkafka's retriable flag.
RETRIABLE_CODES: dict[int, str] = {
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    27: "REBALANCE_IN_PROGRESS",
    41: "NOT_CONTROLLER",
    51: "CONCURRENT_TRANSACTIONS",
    56: "KAFKA_STORAGE_ERROR",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    -180: "_WAIT_COORD",
}
# A topic just created is unknown to a broker until the controller's metadata reaches it, and its partitions have no
# leader in the client's metadata until one is elected (librdkafka's _NOENT: "Failed to query partition leaders: No
# leaders found"); both last well under a second on a healthy cluster. They are retried for UNKNOWN_TOPIC_GRACE
# seconds only, so that a topic that really does not exist fails fast.
UNKNOWN_TOPIC_OR_PART = 3
NO_LEADER_KNOWN = -156
NOT_YET = (UNKNOWN_TOPIC_OR_PART, NO_LEADER_KNOWN)
UNKNOWN_TOPIC_GRACE = 5.0

INITIAL_BACKOFF = 0.1
MAX_BACKOFF = 2.0
HANG_GRACE_S = 15.0
"""How long past the timeout it was given an attempt may run before it is abandoned (its thread left blocked)."""


def error_of(exc: BaseException) -> Any:
    """The ``confluent_kafka.KafkaError`` a ``KafkaException`` carries (or that is raised itself), else ``None``."""
    from confluent_kafka import KafkaError as RdKafkaError

    if isinstance(exc, RdKafkaError):
        return exc
    detail = exc.args[0] if getattr(exc, "args", None) else None
    return detail if isinstance(detail, RdKafkaError) else None


def describe(exc: BaseException) -> str:
    error = error_of(exc)
    if error is not None:
        return str(error.str())
    detail = exc.args[0] if getattr(exc, "args", None) else exc
    return str(detail)


def retriable(exc: BaseException) -> bool:
    """Whether a failure means "try again": librdkafka's retriable flag, or one of :data:`RETRIABLE_CODES`."""
    error = error_of(exc)
    if error is None:
        return False
    if error.fatal() or error.txn_requires_abort():
        return False
    return bool(error.retriable()) or error.code() in RETRIABLE_CODES or error.code() in NOT_YET


def call(
    what: str,
    attempt: Callable[[float], T],
    timeout: float,
    *,
    unknown_topic_grace: float = UNKNOWN_TOPIC_GRACE,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``attempt(remaining_seconds)`` until it returns, retrying retriable Kafka errors with exponential backoff
    (0.1 s doubling to 2 s) for at most ``timeout`` seconds in all; an unknown topic or partition for at most
    ``unknown_topic_grace`` seconds (0 where it means the topic is gone). ``what`` names the operation and what it
    concerns (topic/partition/group) in the :class:`KafkaError` raised when it fails. A :class:`KafkaError` raised
    by ``attempt`` passes through."""
    with logged_wait(f"Kafka {what}", log):
        return _call(what, attempt, timeout, unknown_topic_grace, sleep, clock)


def _bounded(what: str, attempt: Callable[[float], T], remaining: float) -> T:
    """``attempt(remaining)`` in a thread of its own, waited for ``remaining + HANG_GRACE_S`` seconds at most: a
    library call that ignores its timeout is abandoned (left blocked, a daemon thread) with a :class:`KafkaError`,
    instead of holding the caller. Its result or error otherwise comes back as if called here."""
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, attempt(remaining)))
        except BaseException as exc:  # handed to the caller below
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="kafka-s3-kafka-call", daemon=True).start()
    bound = remaining + HANG_GRACE_S
    if not done.wait(bound):
        raise KafkaError(
            f"Kafka {what} did not return within {bound:.0f} s although given {remaining:.0f} s: abandoned "
            "(librdkafka did not time it out, as a transactional call waiting for its coordinator after a broker "
            "restart does)"
        )
    ok, value = outcome[0]
    if ok:
        return cast(T, value)
    raise value


def _call(
    what: str,
    attempt: Callable[[float], T],
    timeout: float,
    unknown_topic_grace: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> T:
    started = clock()
    deadline = started + timeout
    backoff = INITIAL_BACKOFF
    attempts = 0
    while True:
        attempts += 1
        try:
            return _bounded(what, attempt, max(deadline - clock(), 0.001))
        except (KafkaError, Interrupted):  # the project's verdict, or a signal ending the wait: as they are
            raise
        except Exception as exc:
            error = error_of(exc)
            gone = error is not None and error.code() == UNKNOWN_TOPIC_OR_PART and unknown_topic_grace <= 0
            if gone or not retriable(exc):
                raise KafkaError(f"Kafka {what} failed: {describe(exc)}") from None
            limit = deadline
            if error is not None and error.code() in NOT_YET:
                limit = min(deadline, started + unknown_topic_grace)
            now = clock()
            if now + backoff > limit:
                raise KafkaError(
                    f"Kafka {what} failed: {describe(exc)} (a retriable error, still failing after {attempts} "
                    f"attempt(s) over {now - started:.1f} s)"
                ) from None
            log.debug("Kafka %s: %s; retrying in %.1f s", what, describe(exc), backoff)
            sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
