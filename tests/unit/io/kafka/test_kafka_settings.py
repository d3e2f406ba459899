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
