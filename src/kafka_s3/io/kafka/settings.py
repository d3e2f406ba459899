"""librdkafka settings from a connector configuration, the way Kafka Connect layers client settings.

Order (later wins): connection keys found at top level (``bootstrap.servers``, ``security.protocol``, ``sasl.*``,
``ssl.*``, ``client.*``), then worker-style ``consumer.*`` / ``producer.*`` / ``admin.*``, then the connector
overrides ``consumer.override.*`` / ``producer.override.*`` / ``admin.override.*``. Java-client-only settings are
translated where librdkafka has an equivalent and otherwise dropped with a warning naming the key, because librdkafka
would refuse to start on an unknown property. Translated: ``sasl.jaas.config`` (Plain/Scram username and password),
``sasl.mechanism``, and the TLS stores once the layers are merged: a PEM truststore (``ssl.truststore.location`` /
``.certificates`` with ``ssl.truststore.type=PEM``, or a location whose file is PEM) becomes ``ssl.ca.location`` /
``ssl.ca.pem``; a PEM keystore (``ssl.keystore.location``, or ``ssl.keystore.key`` + ``.certificate.chain``) becomes
``ssl.key.*`` + ``ssl.certificate.*``; a PKCS12 keystore is librdkafka's own ``ssl.keystore.location``. JKS stores
and PKCS12 truststores have no librdkafka reader: a :class:`ConfigError` says what to use instead.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

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


def _is_pem_file(location: str) -> bool:
    try:
        with open(location, "rb") as handle:
            return b"-----BEGIN " in handle.read(64 * 1024)
    except OSError:
        return False


def _translate_stores(settings: dict[str, str]) -> dict[str, str]:
    """The Java clients' truststore/keystore settings (merged from every layer) → librdkafka's ``ssl.ca.*``,
    ``ssl.key.*``, ``ssl.certificate.*`` and (PKCS12) ``ssl.keystore.*``."""
    out = dict(settings)
    trust_type = out.pop("ssl.truststore.type", "").strip().upper()
    trust_location = out.pop("ssl.truststore.location", "")
    trust_pem = out.pop("ssl.truststore.certificates", "")
    out.pop("ssl.truststore.password", None)  # protects a JKS/PKCS12 file; a PEM truststore has none
    if trust_location or trust_pem:
        if not trust_type and trust_location and _is_pem_file(trust_location):
            trust_type = "PEM"
        if trust_type != "PEM":
            shown = trust_type or "JKS (the Java default when ssl.truststore.type is unset)"
            raise ConfigError(
                f"ssl.truststore.type {shown}: librdkafka reads CA certificates only as PEM; export them "
                "(keytool -exportcert -rfc) and set ssl.truststore.type=PEM with ssl.truststore.location, or set "
                "ssl.ca.location to the PEM file",
                key="ssl.truststore.type",
            )
        if trust_location:
            out["ssl.ca.location"] = trust_location
        if trust_pem:
            out["ssl.ca.pem"] = trust_pem
    key_type = out.pop("ssl.keystore.type", "").strip().upper()
    key_pem, chain_pem = out.pop("ssl.keystore.key", ""), out.pop("ssl.keystore.certificate.chain", "")
    if key_type == "PEM" or key_pem or chain_pem:
        location = out.pop("ssl.keystore.location", "")
        out.pop("ssl.keystore.password", None)  # Java's PEM keystores take the key's password as ssl.key.password
        if location:  # one file: the private key and its certificate chain
            out["ssl.key.location"] = location
            out["ssl.certificate.location"] = location
        if key_pem:
            out["ssl.key.pem"] = key_pem
        if chain_pem:
            out["ssl.certificate.pem"] = chain_pem
    elif key_type not in ("", "PKCS12") and out.get("ssl.keystore.location"):
        raise ConfigError(
            f"ssl.keystore.type {key_type}: librdkafka reads a client keystore as PKCS12 or PEM only; convert it "
            "(keytool -importkeystore -deststoretype PKCS12) and set ssl.keystore.type=PKCS12, or give PEM files "
            "(ssl.keystore.type=PEM)",
            key="ssl.keystore.type",
        )
    if out.get("ssl.endpoint.identification.algorithm") == "":  # Java's way of turning host name checks off
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out


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
    return _translate_stores(settings)


def librdkafka_settings(java_style: Mapping[str, str], warn: bool = True) -> dict[str, str]:
    """One flat set of client settings named as the Java clients name them (e.g. the ``kafka.*`` options of a
    DataFrame read) → librdkafka's names, with the translations :func:`client_settings` applies."""
    return _translate_stores(_normalise(dict(java_style), "", warn))


_SILENT = logging.getLogger("kafka_s3.config_check.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def check_client_settings(settings: Mapping[str, str], role: Role) -> None:
    """Let librdkafka validate property names and values now, so a typo fails at `config validate` time."""
    from confluent_kafka import Consumer, KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    # The probe never connects (no bootstrap servers) and says nothing (librdkafka logs to a silent logger).
    probe: dict[str, Any] = {k: v for k, v in settings.items() if k != "bootstrap.servers"}
    probe["logger"] = _SILENT
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


ROLE_PREFIXES = ("consumer.", "producer.", "admin.")


def is_connection_key(key: str) -> bool:
    """A client setting the configuration takes at top level for every client (``bootstrap.servers``,
    ``security.protocol``, ``client.*``, ``sasl.*``, ``ssl.*``)."""
    return key in _TOP_LEVEL_KEYS or key.startswith(_TOP_LEVEL_PREFIXES)


def property_roles(key: str, value: str) -> tuple[Role, ...]:
    """The kafka-s3 clients librdkafka applies property ``key`` to, as librdkafka itself says: a consumer property
    only to consumers, a producer property to producers and admin clients (which librdkafka runs as producers), any
    other to all three. A name or value librdkafka refuses is a :class:`ConfigError` naming the key."""
    from confluent_kafka import Consumer, KafkaException, Producer

    heard: dict[str, list[str]] = {"producer": [], "consumer": []}

    class Heard:
        def __init__(self, kind: str) -> None:
            self.kind = kind

        def log(self, level: int, fmt: str, *args: object) -> None:
            heard[self.kind].append(fmt % args)

    try:
        Producer({key: value, "logger": Heard("producer")}).poll(0)
        consumer = Consumer({key: value, "group.id": "kafka-s3-property-check", "logger": Heard("consumer")})
        consumer.poll(0)
        consumer.close()
    except (KafkaException, ValueError, TypeError, RuntimeError) as exc:
        error: object = exc.args[0] if exc.args else exc
        text = getattr(error, "str", None)
        message = str(text()) if callable(text) else str(error)
        raise ConfigError(f"invalid Kafka client property {key}={value}: {message}", key=key) from None
    # librdkafka names a property it ignores by its canonical name (linger.ms: queue.buffering.max.ms)
    if any(" is a consumer property and will be ignored" in line for line in heard["producer"]):
        return ("consumer",)
    if any(" is a producer property and will be ignored" in line for line in heard["consumer"]):
        return ("producer", "admin")
    return ("consumer", "producer", "admin")
