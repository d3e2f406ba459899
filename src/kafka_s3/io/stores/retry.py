"""The one retry mechanism of the S3 store, with Confluent's semantics (see its "Automatic Retries").

botocore's own retries are disabled (``total_max_attempts=1``) so that ``s3.part.retries`` and
``s3.retry.backoff.ms`` mean exactly what they mean in Confluent's connector: retry ``n`` waits a random time in
``[0, s3.retry.backoff.ms * 2^(n-1)]`` (full jitter spreads out the retries of many tasks), capped at 24 hours.
Only failures that a later attempt can cure are retried: 5xx, throttling, connection errors, resets and timeouts.
A 4xx (403, 404, 412...) is an answer, not an accident, and is raised at once; the exceptions are throttling, request
timeouts and 409 ``ConditionalRequestConflict`` (a conditional write that raced another request: retried).

A store that stops answering is another matter: each attempt then waits out its read timeout, and ``s3.part.retries``
of them would hold a command for minutes saying nothing. Timeouts and failed connections (not the store's answers)
are retried only while the operation is within its stall budget (``stall_budget_s``): no retry starts past it.
"""

from __future__ import annotations

import logging
import random as _random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    IncompleteReadError,
    SSLError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BACKOFF_MS = 24 * 60 * 60 * 1000
#: 2**40 ms is decades: beyond that exponent every bound is the cap, and huge powers are never computed.
_MAX_EXPONENT = 40

#: Error codes S3 (or a compatible store) answers when it wants the client to slow down or try again.
TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestTimeout",  # 400: the store gave up waiting for our bytes; sending them again can succeed
        # 409: a conditional write raced another operation on the key; S3 asks for a retry, whose answer is then
        # the write or 412 (the other writer won)
        "ConditionalRequestConflict",
    }
)


def http_status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "")


TLS_VERIFICATION_MARKS = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "Hostname mismatch")


def tls_verification_failure(exc: BaseException) -> str | None:
    """Why the store's certificate was refused (e.g. "unable to get local issuer certificate"), or None when ``exc``
    is not a failed certificate verification. Another attempt meets the same certificate: it is never retried."""
    if not isinstance(exc, SSLError):
        return None
    text = str(exc)
    if not any(mark in text for mark in TLS_VERIFICATION_MARKS):
        return None
    reason = re.search(r"\] (.*?)(?: \(_ssl\.c:\d+\))?$", text)
    return reason.group(1) if reason else text


def is_transient(exc: BaseException) -> bool:
    """True for failures worth another attempt; never for a 4xx answer other than throttling and timeouts, nor for a
    certificate the client cannot verify."""
    if tls_verification_failure(exc) is not None:
        return False
    if isinstance(exc, ClientError):
        status = http_status(exc)
        return status >= 500 or status == 429 or error_code(exc) in TRANSIENT_CODES
    if isinstance(exc, (BotoConnectionError, HTTPClientError, IncompleteReadError)):
        return True  # connection refused/reset/closed, read and connect timeouts, truncated bodies
    if isinstance(exc, BotoCoreError):
        return False  # e.g. no credentials, invalid parameters
    return isinstance(exc, (ConnectionError, TimeoutError))  # raw socket errors while streaming a body


def describe(exc: BaseException) -> str:
    """A one-line description of a store failure, for logs and error messages (never contains credentials)."""
    if isinstance(exc, ClientError):
        status, code = http_status(exc), error_code(exc)
        message = exc.response.get("Error", {}).get("Message") or ""
        named = f"HTTP {status}" if code in ("", str(status)) else f"HTTP {status} {code}"  # HEAD answers have no code
        return named + (f": {message}" if message else "")
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` further attempts after the first, with Confluent's exponential full-jitter backoff."""

    retries: int
    backoff_ms: int
    random: Callable[[], float] = field(default=_random.random, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    stall_budget_s: float | None = None  # None: timeouts are retried as any transient failure

    def max_backoff_ms(self, retry: int) -> int:
        """Upper bound of the wait before retry number ``retry`` (1-based)."""
        bound: int = min(self.backoff_ms * 2 ** min(retry - 1, _MAX_EXPONENT), MAX_BACKOFF_MS)
        return bound

    def backoff_seconds(self, retry: int) -> float:
        return self.random() * self.max_backoff_ms(retry) / 1000.0

    def run(self, operation: str, key: str, attempt: Callable[[], T]) -> T:
        """Call ``attempt`` until it succeeds, fails for good, or the retries (or the stall budget) are spent: the
        last error is raised, carrying the number of attempts made as ``retry_attempts``."""
        retry = 0
        started = self.clock()
        while True:
            try:
                return attempt()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                delay = self.backoff_seconds(retry + 1)
                over_budget = (
                    self.stall_budget_s is not None
                    and not isinstance(exc, ClientError)  # no answer from the store, rather than a 5xx or throttling
                    and self.clock() - started + delay >= self.stall_budget_s
                )
                if retry >= self.retries or over_budget:
                    exc.retry_attempts = retry + 1  # type: ignore[attr-defined]  # read by the store's error
                    raise
                retry += 1
                log.warning(
                    "%s %s failed (%s); retry %d of %d in %.3f s",
                    operation,
                    key,
                    describe(exc),
                    retry,
                    self.retries,
                    delay,
                )
                self.sleep(delay)
