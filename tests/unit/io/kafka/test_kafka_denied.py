"""Refused Kafka requests said so a user can act: the ACL to grant, the SASL mechanism, TLS verification."""

from __future__ import annotations

import pytest

from kafka_s3.io.kafka.denied import connection_failure, denial

SASL = {
    "bootstrap.servers": "b:9093",
    "security.protocol": "SASL_SSL",
    "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": "backup",
    "sasl.password": "s3cret-pw",
    "ssl.ca.location": "/etc/ca.pem",
}


@pytest.mark.issue(13, item=3)
def test_denial_names_principal_operation_and_resource():
    assert denial(30, SASL, group="connect-x") == "User:backup lacks READ on group 'connect-x'"
    assert denial(29, SASL, topic="orders") == "User:backup lacks READ on topic 'orders'"
    assert denial(29, SASL, topic="orders", write=True) == "User:backup lacks WRITE on topic 'orders'"
    assert denial(53, SASL, transactional_id="tx-1") == "User:backup lacks WRITE on transactional-id 'tx-1'"
    assert "IDEMPOTENT_WRITE on cluster" in (denial(31, SASL) or "")
    assert denial(-185, SASL) is None
    assert "security.protocol=PLAINTEXT" in (denial(30, {}, group="g") or "")


@pytest.mark.issue(13, item=3)
def test_refused_login_names_mechanism_and_user_never_the_password():
    text = "SASL authentication error: Authentication failed ... with SASL mechanism SCRAM-SHA-512 (s3cret-pw)"
    message = connection_failure(-169, text, SASL) or ""
    assert message.startswith("Kafka authentication failed for user 'backup' with SASL mechanism SCRAM-SHA-512")
    assert "s3cret-pw" not in message and "***" in message


@pytest.mark.issue(13, item=3)
def test_certificate_failure_names_tls_verification_and_the_ca():
    text = "SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate could not"
    message = connection_failure(-181, text, SASL) or ""
    assert message.startswith("TLS certificate verification of the Kafka broker at b:9093 failed against /etc/ca.pem")
    assert connection_failure(-195, "Broker transport failure", SASL) is None
