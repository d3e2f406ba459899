"""A second SeaweedFS for the security tests: S3 over HTTPS with a certificate from a throwaway CA, and
least-privilege identities.

It runs beside the suite's plain-HTTP SeaweedFS (never touching it): its own state directory and its own ports
(``KAFKA_S3_SECURE_S3_PORT``, default 22633, so that every port stays below Linux's ephemeral range): SeaweedFS
takes that port to +4 for its servers, +5 for HTTPS and the gRPC twins at +10000. The CA and the server certificate
are made here with ``cryptography``; a second, unrelated CA is made too, for the "wrong CA" tests.

Identities (``s3.json``; SeaweedFS supports per-bucket actions ``Action:bucket``):

- ``admin``: everything (creates the bucket, inspects it);
- ``backup``: ``Read``, ``Write`` and ``List`` on :data:`BUCKET` only;
- ``restore``: ``Read`` and ``List`` on :data:`BUCKET` only.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.integration import xdist_worker_index
from tools import services

BUCKET = "least-privilege"
OTHER_BUCKET = "not-yours"  # no right of the backup and restore identities covers it
REGION = "us-east-1"
DEFAULT_PORT = 22633
IDENTITIES = {
    "admin": ("secure-admin", "secure-admin-secret", ["Admin", "Read", "List", "Tagging", "Write"]),
    "backup": ("secure-backup", "secure-backup-secret", [f"Read:{BUCKET}", f"Write:{BUCKET}", f"List:{BUCKET}"]),
    "restore": ("secure-restore", "secure-restore-secret", [f"Read:{BUCKET}", f"List:{BUCKET}"]),
}


@dataclass(frozen=True)
class Identity:
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class SecureS3:
    endpoint: str  # https://127.0.0.1:<port>
    ca_bundle: Path  # PEM of the CA that signed the server certificate
    wrong_ca_bundle: Path  # PEM of another CA
    bucket: str
    other_bucket: str
    region: str
    identities: dict[str, Identity]

    def client(self, identity: str = "admin"):
        import boto3
        from botocore.config import Config

        who = self.identities[identity]
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=who.access_key,
            aws_secret_access_key=who.secret_key,
            region_name=self.region,
            verify=str(self.ca_bundle),
            config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}),
        )

    def settings(self, identity: str) -> dict[str, str]:
        """Store properties of a configuration using ``identity`` over HTTPS, trusting the private CA."""
        who = self.identities[identity]
        return {
            "s3.bucket.name": self.bucket,
            "store.url": self.endpoint,
            "s3.region": self.region,
            "aws.access.key.id": who.access_key,
            "aws.secret.access.key": who.secret_key,
            "s3.ssl.ca.bundle": str(self.ca_bundle),
        }


# ------------------------------------------------------------------------------------------------ certificates
def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_ca(directory: Path, name: str) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital signature, cert sign, CRL sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


def make_server_cert(
    directory: Path, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate
) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    return cert_path, key_path


# ------------------------------------------------------------------------------------------------------ server
def _ports(port: int) -> list[int]:
    servers = [port + i for i in range(5)]
    return [*servers, port + 5, *(p + 10000 for p in servers)]


def _worker_offset() -> int:
    """Each pytest-xdist worker (``make test`` runs two) starts a server of its own: ports 20 apart (gw0, gw1, ...)."""
    return 20 * xdist_worker_index()


def _free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is no obstacle
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start(base: Path, port: int | None = None) -> tuple[SecureS3, subprocess.Popen]:
    """Start the HTTPS SeaweedFS in ``base`` (a fresh directory); create :data:`BUCKET` and :data:`OTHER_BUCKET`."""
    port = port or int(os.environ.get("KAFKA_S3_SECURE_S3_PORT", DEFAULT_PORT)) + _worker_offset()
    busy = [p for p in _ports(port) if not _free(p)]
    if busy:
        raise RuntimeError(
            f"the HTTPS SeaweedFS needs ports {_ports(port)}, but {busy} are in use: set KAFKA_S3_SECURE_S3_PORT"
        )
    tls = base / "tls"
    (base / "data").mkdir(parents=True)
    (base / "logs").mkdir()
    tls.mkdir()
    ca_path, ca_key, ca_cert = make_ca(tls, "kafka-s3-test-ca")
    wrong_ca_path, _, _ = make_ca(tls, "unrelated-ca")
    cert, key = make_server_cert(tls, ca_key, ca_cert)
    config = {
        "identities": [
            {"name": name, "credentials": [{"accessKey": ak, "secretKey": sk}], "actions": actions}
            for name, (ak, sk, actions) in IDENTITIES.items()
        ]
    }
    (base / "s3.json").write_text(json.dumps(config))
    https_port = port + 5
    cmd = services.weed_command(
        base, port, f"-s3.port.https={https_port}", f"-s3.cert.file={cert}", f"-s3.key.file={key}"
    )
    log = base / "weed.out"
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=base, start_new_session=True)
    server = SecureS3(
        endpoint=f"https://127.0.0.1:{https_port}",
        ca_bundle=ca_path,
        wrong_ca_bundle=wrong_ca_path,
        bucket=BUCKET,
        other_bucket=OTHER_BUCKET,
        region=REGION,
        identities={name: Identity(ak, sk) for name, (ak, sk, _) in IDENTITIES.items()},
    )
    try:
        services._wait("HTTPS S3 (SeaweedFS)", lambda: bool(server.client().list_buckets()), 90, log)
        for bucket in (BUCKET, OTHER_BUCKET):
            server.client().create_bucket(Bucket=bucket)
    except BaseException:
        stop(proc)
        raise
    return server, proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
