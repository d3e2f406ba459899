"""A secured Apache Kafka broker for the security tests: SASL_SSL with SCRAM-SHA-512, a throwaway CA, ACLs.

``SecureKafka.start(state)`` makes a CA and a broker certificate (for ``localhost`` and ``127.0.0.1``), then starts
Apache Kafka (``bin/kafka-test-broker.sh`` of the distribution at ``$KAFKA_S3_KAFKA_HOME``, by default
``../shared/kafka`` next to the repository) with two client listeners:

- ``PLAINTEXT`` on 127.0.0.1 — the principal ``User:ANONYMOUS``, a super user: the admin's way in (and the
  controller's and inter-broker traffic);
- ``SASL_SSL`` (SCRAM-SHA-512 over TLS with the broker certificate) — the users' way in, under the
  ``StandardAuthorizer``: a user can do only what an ACL allows.

``SecureKafka.external()`` describes a secured cluster someone else runs instead (``KAFKA_S3_SECURE_BOOTSTRAP``,
``KAFKA_S3_SECURE_CA_FILE``, ``KAFKA_S3_SECURE_ADMIN_USER`` / ``KAFKA_S3_SECURE_ADMIN_PASSWORD`` of a super user,
``KAFKA_S3_SECURE_MECHANISM``, default SCRAM-SHA-512): the admin then talks SASL_SSL too. Either way users and ACLs
are made through the admin client (``add_user``, ``allow``), so a test sets up the principals it needs.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
MECHANISM = "SCRAM-SHA-512"

EXTERNAL_ENV = (
    "KAFKA_S3_SECURE_BOOTSTRAP",
    "KAFKA_S3_SECURE_CA_FILE",
    "KAFKA_S3_SECURE_ADMIN_USER",
    "KAFKA_S3_SECURE_ADMIN_PASSWORD",
)


def kafka_home(environ: Mapping[str, str] | None = None) -> Path:
    """The Apache Kafka distribution: ``$KAFKA_S3_KAFKA_HOME``, else ``../shared/kafka`` from the repository root."""
    env = os.environ if environ is None else environ
    return Path(env.get("KAFKA_S3_KAFKA_HOME") or REPO_ROOT.parent / "shared" / "kafka").resolve()


def apache_kafka_missing(environ: Mapping[str, str] | None = None) -> str | None:
    """Why no secured broker can be started here (``None`` when one can)."""
    home = kafka_home(environ)
    script = home / "bin" / "kafka-test-broker.sh"
    if not script.exists():
        return f"no Apache Kafka distribution at {home} (set KAFKA_S3_KAFKA_HOME; {script.name} is missing)"
    if not shutil.which("java"):
        return "Apache Kafka needs Java 17, and no java is on PATH"
    return None


def secure_kafka_unavailable(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the secured-Kafka tests cannot run: no external secured cluster (``KAFKA_S3_SECURE_BOOTSTRAP``) and no
    Apache Kafka to start one from. ``None`` when they can."""
    env = os.environ if environ is None else environ
    if env.get("KAFKA_S3_SECURE_BOOTSTRAP"):
        return None
    why = apache_kafka_missing(env)
    return f"{why}, and KAFKA_S3_SECURE_BOOTSTRAP names no external secured cluster" if why else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_ca_and_broker_cert(directory: Path, hosts: Iterable[str] = ("localhost", "127.0.0.1")) -> tuple[Path, Path]:
    """A throwaway CA (``ca.pem``) and a broker key + certificate chain signed by it (``broker.pem``, PEM key first,
    as Kafka's ``ssl.keystore.type=PEM`` reads it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-s3 test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file = directory / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(pem))
    broker_file = directory / "broker.pem"
    broker_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + cert.public_bytes(pem)
        + ca_cert.public_bytes(pem)
    )
    broker_file.chmod(0o600)
    return ca_file, broker_file


@dataclass
class SecureKafka:
    """A SASL_SSL cluster with an admin way in; ``client_config`` gives a user's Confluent-style settings."""

    bootstrap: str  # the SASL_SSL listener
    ca_file: Path
    admin_settings: dict[str, str]  # librdkafka settings of a super user
    mechanism: str = MECHANISM
    state: Path | None = None  # set when this process started the broker
    _admin: Any = field(default=None, repr=False)

    # ------------------------------------------------------------------------------------------------ lifecycle
    @classmethod
    def external(cls, environ: Mapping[str, str] | None = None) -> SecureKafka | None:
        """The secured cluster named by ``KAFKA_S3_SECURE_*`` (``None`` when ``KAFKA_S3_SECURE_BOOTSTRAP`` is unset)."""
        env = os.environ if environ is None else environ
        if not env.get("KAFKA_S3_SECURE_BOOTSTRAP"):
            return None
        missing = [name for name in EXTERNAL_ENV if not env.get(name)]
        if missing:
            raise RuntimeError(f"KAFKA_S3_SECURE_BOOTSTRAP is set but {', '.join(missing)} is not")
        mechanism = env.get("KAFKA_S3_SECURE_MECHANISM") or MECHANISM
        return cls(
            bootstrap=env["KAFKA_S3_SECURE_BOOTSTRAP"],
            ca_file=Path(env["KAFKA_S3_SECURE_CA_FILE"]),
            mechanism=mechanism,
            admin_settings={
                "bootstrap.servers": env["KAFKA_S3_SECURE_BOOTSTRAP"],
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": mechanism,
                "sasl.username": env["KAFKA_S3_SECURE_ADMIN_USER"],
                "sasl.password": env["KAFKA_S3_SECURE_ADMIN_PASSWORD"],
                "ssl.ca.location": env["KAFKA_S3_SECURE_CA_FILE"],
            },
        )

    @classmethod
    def start(cls, state: Path, environ: Mapping[str, str] | None = None) -> SecureKafka:
        """Start a secured broker with its state (certificates, data, logs) in ``state``."""
        home = kafka_home(environ)
        why = apache_kafka_missing(environ)
        if why:
            raise RuntimeError(why)
        state = state.resolve()
        ca_file, broker_file = make_ca_and_broker_cert(state / "tls")
        plain, controller, secure = _free_port(), _free_port(), _free_port()
        extra = "\n".join(
            [
                f"listeners=PLAINTEXT://127.0.0.1:{plain},CONTROLLER://127.0.0.1:{controller},"
                f"SASL_SSL://127.0.0.1:{secure}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secure}",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
                f"sasl.enabled.mechanisms={MECHANISM}",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "ssl.keystore.type=PEM",
                f"ssl.keystore.location={broker_file}",
                "ssl.client.auth=none",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:ANONYMOUS",
                "allow.everyone.if.no.acl.found=false",
            ]
        )
        env = dict(os.environ if environ is None else environ)
        env.update(
            {
                "KAFKA_TEST_BROKER_EXTRA_PROPS": extra,
                "CONTROLLER_PORT": str(controller),
                "KAFKA_HEAP_OPTS": env.get("KAFKA_S3_SECURE_HEAP", "-Xmx512m -Xms128m"),
            }
        )
        script = home / "bin" / "kafka-test-broker.sh"
        done = subprocess.run(
            [str(script), "start", str(state / "broker"), str(plain)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"secured Kafka did not start: {done.stderr.strip() or done.stdout.strip()}")
        cluster = cls(
            bootstrap=f"127.0.0.1:{secure}",
            ca_file=ca_file,
            admin_settings={"bootstrap.servers": f"127.0.0.1:{plain}"},
            state=state,
        )
        try:
            cluster.warm_up()
        except Exception:
            cluster.stop()
            raise
        return cluster

    def stop(self) -> None:
        if self.state is None:
            return
        home = kafka_home()
        subprocess.run(
            [str(home / "bin" / "kafka-test-broker.sh"), "stop", str(self.state / "broker")],
            capture_output=True,
            timeout=120,
            check=False,
        )

    def warm_up(self, timeout: float = 60.0) -> None:
        """Create the broker's internal topics (consumer offsets, transaction state) as the admin, so the tests'
        first group and transactional requests meet a settled coordinator. (Retrying a fresh cluster's
        NOT_COORDINATOR is the clients' job, tested on its own; these tests are about security.)"""
        from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

        topic = "kafka-s3-warm-up"
        from kafka_s3.io.kafka.admin import Admin

        admin = Admin(self.admin_settings)
        if topic not in admin.topics():
            admin.create_topic(topic, 1)
        deadline = time.monotonic() + timeout
        while True:
            consumer = Consumer({**self.admin_settings, "group.id": topic, "enable.auto.commit": "false"})
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                producer = Producer({**self.admin_settings, "transactional.id": topic})
                producer.init_transactions(30)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
            finally:
                consumer.close()

    # ------------------------------------------------------------------------------------------------ admin
    @property
    def admin(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient(dict(self.admin_settings))
        return self._admin

    def add_user(self, name: str, password: str) -> None:
        """Create (or reset) a SCRAM user."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported without __all__
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        mechanism = ScramMechanism[self.mechanism.replace("-", "_")]
        upsert = UserScramCredentialUpsertion(name, ScramCredentialInfo(mechanism, 8192), password.encode())
        for future in self.admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)

    def allow(self, user: str, resource: str, name: str, operations: Iterable[str], prefixed: bool = False) -> None:
        """ALLOW ``operations`` (``READ``, ``WRITE``, ``DESCRIBE``, ``IDEMPOTENT_WRITE``...) on a resource (``TOPIC``,
        ``GROUP``, ``TRANSACTIONAL_ID``, ``CLUSTER`` named ``kafka-cluster``) to ``User:<user>`` from any host."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported without __all__
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        pattern = ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL
        kind = ResourceType.BROKER if resource == "CLUSTER" else ResourceType[resource]  # the client's name for it
        bindings = [
            AclBinding(
                kind,
                name,
                pattern,
                f"User:{user}",
                "*",
                AclOperation[operation],
                AclPermissionType.ALLOW,
            )
            for operation in operations
        ]
        for future in self.admin.create_acls(bindings).values():
            future.result(30)

    # ------------------------------------------------------------------------------------------------ clients
    def client_config(self, user: str, password: str, prefix: str = "") -> dict[str, str]:
        """Confluent-style (Java client) settings of a user: ``security.protocol``, ``sasl.mechanism``,
        ``sasl.jaas.config`` and a PEM truststore, each under ``prefix`` (e.g. ``consumer.``)."""
        jaas = (
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
        )
        settings = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": self.mechanism,
            "sasl.jaas.config": jaas,
            "ssl.truststore.location": str(self.ca_file),
            "ssl.truststore.type": "PEM",
        }
        return {prefix + key: value for key, value in settings.items()}

    def librdkafka_config(self, user: str, password: str) -> dict[str, str]:
        """The same user's settings as librdkafka names them (for test clients)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": self.mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.ca_file),
        }
