"""Client settings: Connect's layering, Java→librdkafka translation, early validation."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError
from kafka_s3.io.kafka.settings import check_client_settings, client_settings, translate_jaas

BASE = {"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}


def test_layering_top_level_worker_then_override():
    config = SINK.parse(
        {
            **BASE,
            "bootstrap.servers": "k1:9092,k2:9092",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "consumer.fetch.min.bytes": "10",
            "consumer.override.fetch.min.bytes": "20",
            "producer.linger.ms": "7",
        }
    )
    consumer = client_settings(config, "consumer", environ={})
    assert consumer["bootstrap.servers"] == "k1:9092,k2:9092"
    assert consumer["security.protocol"] == "SASL_SSL" and consumer["sasl.mechanisms"] == "PLAIN"
    assert consumer["fetch.min.bytes"] == "20" and "linger.ms" not in consumer
    assert client_settings(config, "producer", environ={})["linger.ms"] == "7"


def test_bootstrap_from_environment_and_missing():
    config = SINK.parse(BASE)
    assert client_settings(config, "admin", environ={"KAFKA_BOOTSTRAP_SERVERS": "h:1"})["bootstrap.servers"] == "h:1"
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        client_settings(config, "admin", environ={})


def test_jaas_translation():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u1" password="p\\"w";'
    assert translate_jaas(jaas) == {"sasl.username": "u1", "sasl.password": 'p\\"w'}
    with pytest.raises(ConfigError, match="sasl.jaas.config"):
        translate_jaas("com.sun.security.auth.module.Krb5LoginModule required;")


def test_java_only_settings_dropped_with_warning(caplog):
    config = SINK.parse({**BASE, "bootstrap.servers": "h:1", "consumer.override.key.deserializer": "x.Y"})
    assert "key.deserializer" not in client_settings(config, "consumer", environ={})
    assert "key.deserializer" in caplog.text


def test_librdkafka_validates_property_names():
    with pytest.raises(ConfigError, match="no.such.property"):
        check_client_settings({"bootstrap.servers": "127.0.0.1:1", "no.such.property": "1"}, "consumer")
    check_client_settings({"bootstrap.servers": "127.0.0.1:1", "fetch.min.bytes": "5"}, "consumer")


# issue 13 item 3: the Java clients' PEM truststore/keystore settings are translated, not dropped.
@pytest.mark.issue(13, item=3)
def test_pem_truststore_and_keystore_translated_across_layers(tmp_path):
    ca, keystore = tmp_path / "ca.pem", tmp_path / "client.pem"
    config = SINK.parse(
        {
            **BASE,
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(ca),
            "consumer.ssl.truststore.type": "PEM",
            "ssl.truststore.password": "ignored-for-pem",
            "consumer.override.ssl.keystore.type": "pem",
            "consumer.override.ssl.keystore.location": str(keystore),
            "consumer.override.ssl.key.password": "kp",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    consumer = client_settings(config, "consumer", environ={})
    assert consumer["ssl.ca.location"] == str(ca)
    assert consumer["ssl.certificate.location"] == str(keystore) and consumer["ssl.key.location"] == str(keystore)
    assert consumer["ssl.key.password"] == "kp"
    assert consumer["ssl.endpoint.identification.algorithm"] == "none"
    assert not [k for k in consumer if k.startswith(("ssl.truststore.", "ssl.keystore."))]
    # the producer sees the top-level truststore without the consumer's type: PEM content is recognised
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert client_settings(config, "producer", environ={})["ssl.ca.location"] == str(ca)


@pytest.mark.issue(13, item=3)
def test_inline_pem_certificates_translated():
    config = SINK.parse(
        {
            **BASE,
            "bootstrap.servers": "h:1",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----...",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----...",
            "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----chain",
        }
    )
    admin = client_settings(config, "admin", environ={})
    assert admin["ssl.ca.pem"] == "-----BEGIN CERTIFICATE-----..."
    assert admin["ssl.key.pem"] == "-----BEGIN PRIVATE KEY-----..."
    assert admin["ssl.certificate.pem"] == "-----BEGIN CERTIFICATE-----chain"


@pytest.mark.issue(13, item=3)
def test_pkcs12_keystore_passes_through_to_librdkafka():
    config = SINK.parse(
        {
            **BASE,
            "bootstrap.servers": "h:1",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": "/k.p12",
            "ssl.keystore.password": "pw",
        }
    )
    admin = client_settings(config, "admin", environ={})
    assert admin["ssl.keystore.location"] == "/k.p12" and admin["ssl.keystore.password"] == "pw"
    assert "ssl.keystore.type" not in admin


@pytest.mark.issue(13, item=3)
@pytest.mark.parametrize(
    ("properties", "key", "advice"),
    [
        ({"ssl.truststore.type": "JKS", "ssl.truststore.location": "/t.jks"}, "ssl.truststore.type", "PEM"),
        ({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/t.p12"}, "ssl.truststore.type", "PEM"),
        ({"ssl.truststore.location": "/no/such/truststore.jks"}, "ssl.truststore.type", "ssl.ca.location"),
        ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"}, "ssl.keystore.type", "PKCS12"),
    ],
)
def test_jks_and_pkcs12_truststores_refused_with_advice(properties, key, advice):
    config = SINK.parse({**BASE, "bootstrap.servers": "h:1", **properties})
    with pytest.raises(ConfigError, match=advice) as caught:
        client_settings(config, "consumer", environ={})
    assert caught.value.key == key
