"""Schema Registry access for AvroConverter: Confluent's converter settings, one shared client per registry, and
subject names.

Settings are the converter's own (``value.converter.*`` / ``key.converter.*``), named as Confluent names them:

- ``schema.registry.url``: one URL or a comma-separated list (required; ``mock://<scope>`` is confluent-kafka's
  in-memory registry, for tests);
- ``basic.auth.credentials.source``: ``URL`` (default: ``https://user:password@host``), ``USER_INFO``
  (``basic.auth.user.info=user:password``, or the older ``schema.registry.basic.auth.user.info``) or
  ``SASL_INHERIT`` (the username and password of the converter's ``sasl.jaas.config``);
- ``bearer.auth.*``: passed to the client as they are (``bearer.auth.credentials.source=STATIC_TOKEN``,
  ``bearer.auth.token``, ``bearer.auth.logical.cluster``, ``bearer.auth.identity.pool.id``, OAuth client settings);
- TLS: ``schema.registry.ssl.truststore.location`` / ``.type`` (``PEM`` or ``PKCS12``; Java's ``JKS`` cannot be read
  from Python) / ``.password``, ``schema.registry.ssl.truststore.certificates`` (PEM text),
  ``schema.registry.ssl.keystore.location`` / ``.type`` / ``.password``, ``schema.registry.ssl.key.password``,
  ``schema.registry.ssl.keystore.certificate.chain`` + ``schema.registry.ssl.keystore.key`` (PEM text), and the
  Python client's own ``schema.registry.ssl.ca.location``, ``.certificate.location``, ``.key.location``;
- ``schema.registry.proxy.host`` / ``.port``; ``max.retries``, ``retries.wait.ms``, ``retries.max.wait.ms``.

Clients (and their schema caches) are shared per registry settings within a process, so key and value converters,
every task of a Spark worker and every cycle reuse one client. Every request is bounded: the backup's and the
restore's own calls by ``service.timeout.ms`` (connect and read timeout of each attempt), the converters' by its
default, so a registry that accepts connections and never answers fails after the client's retries, not never.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_s3.core.errors import ConfigError, KafkaS3Error

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

log = logging.getLogger(__name__)

STRATEGIES = {
    "io.confluent.kafka.serializers.subject.topicnamestrategy": "topic",
    "topicnamestrategy": "topic",
    "io.confluent.kafka.serializers.subject.recordnamestrategy": "record",
    "recordnamestrategy": "record",
    "io.confluent.kafka.serializers.subject.topicrecordnamestrategy": "topic_record",
    "topicrecordnamestrategy": "topic_record",
}
CREDENTIAL_SOURCES = ("URL", "USER_INFO", "SASL_INHERIT")
PASSED_THROUGH = ("max.retries", "retries.wait.ms", "retries.max.wait.ms")
SSL = "schema.registry.ssl."


class SchemaRegistryUnavailable(KafkaS3Error):
    """The Schema Registry could not be reached or answered with a server error (worth retrying later)."""

    exit_code = 4


def subject_name(strategy: str, topic: str, is_key: bool, record_name: str | None) -> str:
    """The subject of a schema: ``<topic>-key|value`` (TopicNameStrategy), the record's full name
    (RecordNameStrategy) or ``<topic>-<record>`` (TopicRecordNameStrategy)."""
    if strategy == "topic":
        return f"{topic}-{'key' if is_key else 'value'}"
    if not record_name:
        raise KafkaS3Error(f"{strategy} subject names need a named schema (a record), not a primitive one")
    return record_name if strategy == "record" else f"{topic}-{record_name}"


def subject_strategy(settings: Mapping[str, str], prefix: str, is_key: bool) -> str:
    key = f"{'key' if is_key else 'value'}.subject.name.strategy"
    raw = str(settings.get(key, "TopicNameStrategy")).strip()
    strategy = STRATEGIES.get(raw.lower())
    if strategy is None:
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {prefix}{key}: expected TopicNameStrategy, RecordNameStrategy or "
            "TopicRecordNameStrategy (io.confluent.kafka.serializers.subject.*)",
            key=prefix + key,
        )
    return strategy


def boolean(settings: Mapping[str, str], name: str, default: bool, prefix: str) -> bool:
    raw = settings.get(name)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {prefix}{name}: Expected value to be either true or false",
            key=prefix + name,
        )
    return text == "true"


def client_config(settings: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The confluent-kafka ``SchemaRegistryClient`` configuration for Confluent converter settings."""
    url = str(settings.get("schema.registry.url", "")).strip()
    if not url:
        raise ConfigError(
            f'Missing required configuration "{prefix}schema.registry.url" which has no default '
            "value (AvroConverter reads schemas from a Schema Registry)",
            key=prefix + "schema.registry.url",
        )
    conf: dict[str, Any] = {"url": url}
    source = str(settings.get("basic.auth.credentials.source", "URL")).strip().upper()
    if source not in CREDENTIAL_SOURCES:
        raise ConfigError(
            f"Invalid value {source!r} for configuration {prefix}basic.auth.credentials.source: expected "
            "one of URL, USER_INFO, SASL_INHERIT",
            key=prefix + "basic.auth.credentials.source",
        )
    user_info = settings.get("basic.auth.user.info") or settings.get("schema.registry.basic.auth.user.info")
    if source == "USER_INFO":
        if not user_info or ":" not in str(user_info):
            raise ConfigError(
                f"{prefix}basic.auth.credentials.source=USER_INFO needs {prefix}basic.auth.user.info=<user>:<password>",
                key=prefix + "basic.auth.user.info",
            )
        conf["basic.auth.user.info"] = str(user_info)
    elif source == "SASL_INHERIT":
        from kafka_s3.io.kafka.settings import translate_jaas

        jaas = settings.get("sasl.jaas.config")
        if not jaas:
            raise ConfigError(
                f"{prefix}basic.auth.credentials.source=SASL_INHERIT needs {prefix}sasl.jaas.config",
                key=prefix + "sasl.jaas.config",
            )
        sasl = translate_jaas(str(jaas))
        conf["basic.auth.user.info"] = f"{sasl['sasl.username']}:{sasl['sasl.password']}"
    elif user_info:
        log.warning(
            "%sbasic.auth.user.info is ignored: %sbasic.auth.credentials.source is URL (set it to USER_INFO, "
            "as Confluent's converters require)",
            prefix,
            prefix,
        )
    for key, value in settings.items():
        if key.startswith("bearer.auth."):
            conf[key] = str(value)
        elif key in PASSED_THROUGH:
            try:
                conf[key] = int(value)
            except ValueError:
                raise ConfigError(
                    f"Invalid value {value!r} for configuration {prefix}{key}: expected an integer", key=prefix + key
                ) from None
    host, port = settings.get("schema.registry.proxy.host"), settings.get("schema.registry.proxy.port")
    if host:
        conf["proxy"] = f"http://{host}:{port}" if port else f"http://{host}"
    conf.update(_tls(settings, prefix))
    return conf


def _tls(settings: Mapping[str, str], prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("ca.location", "certificate.location", "key.location", "key.password"):
        if settings.get(SSL + name):
            out[f"ssl.{name}"] = str(settings[SSL + name])
    if settings.get(SSL + "truststore.certificates"):
        out["ssl.ca.location"] = _pem_file(str(settings[SSL + "truststore.certificates"]), "truststore")
    location = settings.get(SSL + "truststore.location")
    if location:
        kind = _store_type(settings, "truststore", prefix)
        if kind == "PEM":
            out["ssl.ca.location"] = str(location)
        else:
            _, cert, extra = _pkcs12(
                str(location), settings.get(SSL + "truststore.password"), prefix + SSL + "truststore"
            )
            out["ssl.ca.location"] = _pem_file(
                _certificates_pem([c for c in [cert, *extra] if c is not None]), "truststore"
            )
    chain, key = settings.get(SSL + "keystore.certificate.chain"), settings.get(SSL + "keystore.key")
    if chain and key:
        out["ssl.certificate.location"] = _pem_file(str(chain), "certificate")
        out["ssl.key.location"] = _pem_file(str(key), "key")
    location = settings.get(SSL + "keystore.location")
    if location:
        password = settings.get(SSL + "key.password") or settings.get(SSL + "keystore.password")
        if _store_type(settings, "keystore", prefix) == "PEM":
            out["ssl.certificate.location"] = out["ssl.key.location"] = str(location)
            if password:
                out["ssl.key.password"] = str(password)
        else:
            private_key, cert, extra = _pkcs12(
                str(location), settings.get(SSL + "keystore.password"), prefix + SSL + "keystore"
            )
            from cryptography.hazmat.primitives import serialization

            # A PKCS12 keystore without a certificate or a private key gives None here, which is not handled
            out["ssl.certificate.location"] = _pem_file(
                _certificates_pem([cert, *extra]),  # type: ignore[list-item]  # cert may be None (see above)
                "certificate",
            )
            out["ssl.key.location"] = _pem_file(
                private_key.private_bytes(  # type: ignore[union-attr]  # private_key may be None (see above)
                    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
                ).decode(),
                "key",
            )
    if str(settings.get(SSL + "endpoint.identification.algorithm", "https")).strip() == "":
        log.warning(
            "%s%sendpoint.identification.algorithm is ignored: the registry's host name is always verified", prefix, SSL
        )
    return out


def _store_type(settings: Mapping[str, str], store: str, prefix: str) -> str:
    kind = str(settings.get(f"{SSL}{store}.type", "JKS")).strip().upper()
    location = str(settings.get(f"{SSL}{store}.location", "")).lower()
    if f"{SSL}{store}.type" not in settings:  # Java's default is JKS; a file's extension says better
        kind = (
            "PEM"
            if location.endswith((".pem", ".crt", ".cer"))
            else "PKCS12"
            if location.endswith((".p12", ".pfx"))
            else kind
        )
    if kind in ("PKCS12", "P12"):
        return "PKCS12"
    if kind == "PEM":
        return "PEM"
    raise ConfigError(
        f"{prefix}{SSL}{store}.type={kind}: Java key stores cannot be read from Python; convert it "
        f"(keytool -importkeystore -deststoretype PKCS12) and set {prefix}{SSL}{store}.type=PKCS12, or "
        "use PEM files",
        key=f"{prefix}{SSL}{store}.type",
    )


def _pkcs12(
    path: str, password: str | None, key: str
) -> tuple[PrivateKeyTypes | None, x509.Certificate | None, list[x509.Certificate]]:
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - cryptography comes with authlib, a dependency of the registry client
        raise ConfigError(f"{key}: PKCS12 stores need the 'cryptography' package", key=key) from None
    try:
        with open(path, "rb") as f:
            return pkcs12.load_key_and_certificates(f.read(), password.encode() if password else None)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{key}.location={path}: cannot read the PKCS12 store: {exc}", key=key + ".location"
        ) from None


def _certificates_pem(certificates: Iterable[x509.Certificate]) -> str:
    from cryptography.hazmat.primitives import serialization

    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


_TEMP_DIR: str | None = None


def _pem_file(text: str, kind: str) -> str:
    """PEM text in a private temporary file (the client takes file names); removed at exit."""
    global _TEMP_DIR
    if _TEMP_DIR is None:
        _TEMP_DIR = tempfile.mkdtemp(prefix="kafka-s3-registry-tls-")
        atexit.register(shutil.rmtree, _TEMP_DIR, True)
    fd, path = tempfile.mkstemp(suffix=f".{kind}.pem", dir=_TEMP_DIR)
    with os.fdopen(fd, "w") as f:
        f.write(text.replace("\\n", "\n"))
    return path


# ---------------------------------------------------------------------------------------------------- clients
_CLIENTS: dict[tuple[tuple[str, Any], ...], SchemaRegistryClient] = {}
_LOCK = threading.Lock()


DEFAULT_TIMEOUT_S = 10.0
"""Connect and read timeout of each registry request (``service.timeout.ms``'s default): the client has none."""


def registry_client(conf: Mapping[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S) -> SchemaRegistryClient:
    """The shared ``SchemaRegistryClient`` for a client configuration (one per distinct configuration), each
    request bounded by ``timeout_s`` per attempt (the client retries ``max.retries`` times, 3 by default)."""
    conf = {"timeout": timeout_s, **conf}
    key = tuple(sorted(conf.items()))
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            client = _CLIENTS[key] = SchemaRegistryClient.new_client(dict(conf))
        return client


def registry_url(client: SchemaRegistryClient) -> str:
    """The URL(s) a client talks to, for messages (a password in one is hidden wherever text is printed)."""
    rest = getattr(client, "_rest_client", None)
    urls = getattr(rest, "base_urls", None)
    return ", ".join(urls) if urls else "the Schema Registry"


def is_not_found(exc: BaseException) -> bool:
    """A Schema Registry 404 (unknown schema id, subject or version): an answer, not an outage."""
    return getattr(exc, "http_status_code", None) == 404


def describe(exc: BaseException) -> str:
    message = getattr(exc, "error_message", None)
    code = getattr(exc, "error_code", None)
    if message is not None:
        return f"{message} (error code {code})"
    return f"{type(exc).__name__}: {exc}"
