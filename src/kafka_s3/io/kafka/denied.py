"""What a refused Kafka request means, said so a user can act: the ACL a principal lacks, a refused SASL login, a broker
certificate TLS could not verify.

librdkafka reports these as error codes with terse text ("Broker: Group authorization failed", "Local: Broker
transport failure"); the messages built here name the principal, the operation and the resource (as
``kafka-acls.sh`` takes them), or the SASL mechanism and user, or the CA file. They never contain a password.
"""

from __future__ import annotations

from collections.abc import Mapping

# Kafka protocol error codes (confluent_kafka.KafkaError mirrors them; kept here so this module imports nothing heavy)
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
AUTHORIZATION_CODES = frozenset(
    {
        TOPIC_AUTHORIZATION_FAILED,
        GROUP_AUTHORIZATION_FAILED,
        CLUSTER_AUTHORIZATION_FAILED,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)
# librdkafka's local codes
AUTHENTICATION = -169
SSL = -181


def principal(settings: Mapping[str, str]) -> str:
    """The principal the broker sees for these settings, as ACLs name it."""
    user = settings.get("sasl.username")
    if user:
        return f"User:{user}"
    return f"the principal of this client (security.protocol={settings.get('security.protocol', 'PLAINTEXT')})"


def lacks(settings: Mapping[str, str], operation: str, resource: str, name: str) -> str:
    """``"User:x lacks READ on group 'g'"``."""
    return f"{principal(settings)} lacks {operation} on {resource} '{name}'"


def denial(
    code: int | None,
    settings: Mapping[str, str],
    *,
    topic: str = "",
    group: str = "",
    transactional_id: str = "",
    write: bool = False,
) -> str | None:
    """The ACL an authorization error code says is missing (``None`` for any other code). ``write``: the refused
    request wrote to ``topic`` (a producer) rather than read it."""
    if code == TOPIC_AUTHORIZATION_FAILED:
        return lacks(settings, "WRITE" if write else "READ", "topic", topic or "?")
    if code == GROUP_AUTHORIZATION_FAILED:
        return lacks(settings, "READ", "group", group or "?")
    if code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return lacks(settings, "WRITE", "transactional-id", transactional_id or "?")
    if code == CLUSTER_AUTHORIZATION_FAILED:
        return (
            f"{lacks(settings, 'IDEMPOTENT_WRITE', 'cluster', 'kafka-cluster')} (or WRITE on the topics it produces to)"
        )
    return None


def _scrub(text: str, settings: Mapping[str, str]) -> str:
    secret = settings.get("sasl.password")
    return text.replace(secret, "***") if secret else text


def connection_failure(code: int | None, text: str, settings: Mapping[str, str]) -> str | None:
    """A refused login or an unverifiable broker certificate, as a sentence (``None`` for other failures)."""
    servers = settings.get("bootstrap.servers", "?")
    text = _scrub(text, settings)
    if code == AUTHENTICATION or "authentication failed" in text.lower():
        mechanism = settings.get("sasl.mechanisms") or settings.get("sasl.mechanism") or "GSSAPI"
        user = settings.get("sasl.username")
        who = f" for user '{user}'" if user else ""
        return (
            f"Kafka authentication failed{who} with SASL mechanism {mechanism} at {servers} (check sasl.jaas.config "
            f"or sasl.username/sasl.password, and sasl.mechanism): {text}"
        )
    if code == SSL or "ssl handshake failed" in text.lower():
        ca = settings.get("ssl.ca.location") or ("ssl.ca.pem" if settings.get("ssl.ca.pem") else "the system's CAs")
        if "certificate verify failed" in text or "could not be verified" in text:
            return (
                f"TLS certificate verification of the Kafka broker at {servers} failed against {ca} (set "
                f"ssl.truststore.location with ssl.truststore.type=PEM, or ssl.ca.location, to the CA that signed the "
                f"broker's certificate): {text}"
            )
        return f"TLS handshake with the Kafka broker at {servers} failed: {text}"
    return None
