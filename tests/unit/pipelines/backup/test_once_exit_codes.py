"""``backup --once`` gives up on a partition with the exit code of the service it failed on (the "No silent loss II"
issue, item 7: an object store outage exited 5, "data", where README's table says 3)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import BackupFailed, KafkaError, StoreError
from kafka_s3.pipelines.backup.cycle import gave_up


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        ("orders[1]: StoreError: put_object s3://b/k failed: HTTP 503 SlowDown (gave up after 4 attempts)", 3),
        ("orders[1]: StoreAccessDeniedError: AccessDenied on s3:PutObject for s3://b/k", 3),
        ("orders[0]: KafkaError: orders[0]: no progress reading offsets [0, 300) for 120s", 4),
        ("orders[0]: SchemaRegistryUnavailable: the Schema Registry at http://r:8081 is unreachable", 4),
        ("orders[0]: ValueError: a surprise", 5),
    ],
)
def test_giving_up_takes_the_exit_code_of_the_failing_service(failure, code):
    error = gave_up("gave up after 4 attempts: " + failure, [failure])
    assert isinstance(error, BackupFailed) and error.exit_code == code


def test_a_service_that_does_not_answer_gives_its_own_exit_code():
    assert gave_up("t[0]: ...", [], StoreError("head_bucket s3://b: cannot reach")).exit_code == 3
    assert gave_up("t[0]: ...", [], KafkaError("metadata request failed")).exit_code == 4
