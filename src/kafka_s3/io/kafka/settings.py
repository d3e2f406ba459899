"""librdkafka settings from a connector configuration, the way Kafka Connect layers client settings.

Order (later wins): connection keys found at top level (``bootstrap.servers``, ``security.protocol``, ``sasl.*``,
``ssl.*``, ``client.*``), then worker-style ``consumer.*`` / ``producer.*`` / ``admin.*``, then the connector
overrides ``consumer.override.*`` / ``producer.override.*`` / ``admin.override.*``. Java-client-only settings are
translated where librdkafka has an equivalent (``sasl.jaas.config`` username/password) and otherwise dropped with a
warning naming the key, because librdkafka would refuse to start on an unknown property.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Literal

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError

log = logging.getLogger(__name__)

Role = Literal["consumer", "producer", "admin"]

_TOP_LEVEL_PREFIXES = ("sasl.", "ssl.", "client.")
_TOP_LEVEL_KEYS = ("bootstrap.servers", "security.protocol", "client.id", "client.rack")

# Java client settings with no librdkafka meaning (serialisation is ours, the rest is JVM plumbing).
_JAVA_ONLY = {
    "key.deserializer",
    "value.deserializer",
    "key.serializer",
    "value.serializer",
    "interceptor.classes",
    "metric.reporters",
    "partition.assignment.strategy",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.login.class",
    "max.poll.records",
    "max.poll.interval.ms.override",
    "default.api.timeout.ms",
    "buffer.memory",
    "max.block.ms",
    "delivery.timeout.ms.override",
}

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def translate_jaas(jaas: str) -> dict[str, str]:
    """``sasl.jaas.config`` (Plain/Scram login modules) → librdkafka ``sasl.username``/``sasl.password``."""
    if "PlainLoginModule" not in jaas and "ScramLoginModule" not in jaas:
        raise ConfigError(
            "sasl.jaas.config: only PlainLoginModule and ScramLoginModule can be translated for librdkafka; set "
            "sasl.username / sasl.password (and sasl.mechanism) instead",
            key="sasl.jaas.config",
        )
    options = dict(_JAAS_OPTION.findall(jaas))
    if "username" not in options or "password" not in options:
        raise ConfigError('sasl.jaas.config must contain username="..." and password="..."', key="sasl.jaas.config")
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _normalise(settings: dict[str, str], origin: str, warn: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in settings.items():
        if key == "sasl.jaas.config":
            out.update(translate_jaas(value))
        elif key == "sasl.mechanism":
            out["sasl.mechanisms"] = value
        elif key in _JAVA_ONLY:
            if warn:
                log.warning("%s%s is a Java client setting with no librdkafka equivalent: ignored", origin, key)
        else:
            out[key] = value
    return out


def client_settings(
    config: Config, role: Role, environ: Mapping[str, str] | None = None, warn: bool = True
) -> dict[str, str]:
    """librdkafka configuration for one client role, before role-specific defaults are added."""
    env = os.environ if environ is None else environ
    originals = {k: str(v) for k, v in config.originals.items()}
    base: dict[str, str] = {}
    for key, value in originals.items():
        if key in _TOP_LEVEL_KEYS or key.startswith(_TOP_LEVEL_PREFIXES):
            base[key] = value
    bootstrap = ",".join(config.get("bootstrap.servers") or []) or env.get("KAFKA_BOOTSTRAP_SERVERS", "")
    if not bootstrap:
        raise ConfigError(
            "No Kafka cluster configured: set bootstrap.servers in the config file or $KAFKA_BOOTSTRAP_SERVERS",
            key="bootstrap.servers",
        )
    base["bootstrap.servers"] = bootstrap
    if not base.get("security.protocol"):
        base.pop("security.protocol", None)
    settings = _normalise(base, "", warn)
    worker_prefix, override_prefix = f"{role}.", f"{role}.override."
    worker = {
        k[len(worker_prefix) :]: v
        for k, v in originals.items()
        if k.startswith(worker_prefix) and not k.startswith(override_prefix)
    }
    override = {k[len(override_prefix) :]: v for k, v in originals.items() if k.startswith(override_prefix)}
    settings.update(_normalise(worker, worker_prefix, warn))
    settings.update(_normalise(override, override_prefix, warn))
    return settings


def check_client_settings(settings: Mapping[str, str], role: Role) -> None:
    """Let librdkafka validate property names and values now, so a typo fails at `config validate` time."""
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    probe: dict[str, str | int | float | bool] = dict(settings)
    try:
        if role == "consumer":
            probe.setdefault("group.id", "kafka-s3-config-check")
            Consumer(probe).close()
        elif role == "producer":
            Producer(probe)
        else:
            AdminClient(probe)
    except (KafkaException, ValueError, TypeError) as exc:
        error: object = exc.args[0] if exc.args else exc
        text = getattr(error, "str", None)  # a KafkaError's own text, without its repr around it
        message = str(text()) if callable(text) else str(error)
        bad = re.search(r'property: "([^"]+)"', message) or re.search(r'"([^"]+)"', message)
        key = f"{role}.override.{bad.group(1)}" if bad else None
        raise ConfigError(f"invalid Kafka {role} setting{f' {key}' if key else ''}: {message}", key=key) from None
