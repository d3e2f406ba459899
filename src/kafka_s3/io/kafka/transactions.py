"""Starting a transactional producer on the driver: the restore's probe for transactions and its fence of a killed
run's open transaction. Both are ``init_transactions`` of a transactional id — a new epoch, which aborts whatever
that id left open — read the same way: the cluster has no transactions, the call was refused (the ACL it needs), or
a Kafka error (retried while retriable, :func:`.retry.call`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafka_s3.core.errors import KafkaAuthorizationError
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.denied import denial

ATTEMPT_S = 30.0  # one init_transactions call at most (librdkafka's own default is 5 min)


def init_transactions(
    settings: Mapping[str, str],
    transactional_id: str,
    timeout: float,
    refused: Callable[[str, str], str],
) -> str:
    """Start a producer of ``transactional_id`` (aborting any transaction it left open): ``""`` when the cluster
    gave it a producer id, else why the cluster has no transactions. A refusal raises
    :class:`~kafka_s3.core.errors.KafkaAuthorizationError` with ``refused(needed ACL, librdkafka's words)``."""
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import KafkaException, Producer

    no_transactions = (RdKafkaError._UNSUPPORTED_FEATURE, RdKafkaError.UNSUPPORTED_VERSION)
    producer = Producer({**settings, "transactional.id": transactional_id})

    def attempt(remaining: float) -> str:
        try:
            producer.init_transactions(min(ATTEMPT_S, remaining))
            return ""
        except KafkaException as exc:
            error = retry.error_of(exc)
            if error is not None and error.code() in no_transactions:
                return str(error.str())
            needed = denial(error.code() if error is not None else None, settings, transactional_id=transactional_id)
            if needed:
                raise KafkaAuthorizationError(refused(needed, retry.describe(exc))) from None
            raise  # retried when retriable (a transaction coordinator still loading, a broker restarting)

    return retry.call(f"init_transactions of transactional.id {transactional_id!r}", attempt, timeout)
