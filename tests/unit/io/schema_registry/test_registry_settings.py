"""Confluent's Schema Registry client settings for AvroConverter (basic auth, TLS, subject strategies), checked
end to end against the test suite's own registry server (tools.schema_registry) on the loopback."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kafka_s3.core.errors import ConfigError
from kafka_s3.io.schema_registry.client import client_config, subject_name
from kafka_s3.io.schema_registry.converter import AvroConverter
from tests.support.avro_versions import V1, record, register_versions, wire
from tools.schema_registry import SchemaRegistryServer

P = "value.converter."


def test_url_credentials_by_default_and_user_info_when_asked(caplog):
    assert client_config({"schema.registry.url": "https://u:p@reg:8081"}, P) == {"url": "https://u:p@reg:8081"}
    conf = client_config(
        {
            "schema.registry.url": "http://reg",
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "alice:s3cr:et",
        },
        P,
    )
    assert conf == {"url": "http://reg", "basic.auth.user.info": "alice:s3cr:et"}
    legacy = client_config(
        {
            "schema.registry.url": "http://reg",
            "basic.auth.credentials.source": "user_info",
            "schema.registry.basic.auth.user.info": "bob:pw",
        },
        P,
    )
    assert legacy["basic.auth.user.info"] == "bob:pw"
    ignored = client_config({"schema.registry.url": "http://reg", "basic.auth.user.info": "alice:pw"}, P)
    assert "basic.auth.user.info" not in ignored and "is ignored" in caplog.text  # as Confluent: source=URL
    with pytest.raises(ConfigError, match="USER_INFO needs value.converter.basic.auth.user.info"):
        client_config({"schema.registry.url": "http://reg", "basic.auth.credentials.source": "USER_INFO"}, P)
    with pytest.raises(ConfigError, match="basic.auth.credentials.source"):
        client_config({"schema.registry.url": "http://reg", "basic.auth.credentials.source": "KERBEROS"}, P)


def test_sasl_inherit_takes_the_jaas_credentials():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="pw";'
    conf = client_config(
        {
            "schema.registry.url": "http://reg",
            "basic.auth.credentials.source": "SASL_INHERIT",
            "sasl.jaas.config": jaas,
        },
        P,
    )
    assert conf["basic.auth.user.info"] == "svc:pw"


def test_bearer_retries_and_proxy_pass_through():
    conf = client_config(
        {
            "schema.registry.url": "http://reg",
            "bearer.auth.credentials.source": "STATIC_TOKEN",
            "bearer.auth.token": "tok",
            "max.retries": "2",
            "schema.registry.proxy.host": "proxy",
            "schema.registry.proxy.port": "3128",
        },
        P,
    )
    assert conf == {
        "url": "http://reg",
        "bearer.auth.credentials.source": "STATIC_TOKEN",
        "bearer.auth.token": "tok",
        "max.retries": 2,
        "proxy": "http://proxy:3128",
    }


def test_java_key_stores_are_refused_with_the_way_out(tmp_path):
    store = tmp_path / "truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed")
    with pytest.raises(ConfigError, match="convert it .*PKCS12") as error:
        client_config({"schema.registry.url": "https://reg", "schema.registry.ssl.truststore.location": str(store)}, P)
    assert error.value.key == "value.converter.schema.registry.ssl.truststore.type"


@pytest.mark.parametrize(
    "strategy, expected", [("topic", "orders-value"), ("record", "shop.Order"), ("topic_record", "orders-shop.Order")]
)
def test_subject_names(strategy, expected):
    assert subject_name(strategy, "orders", False, "shop.Order") == expected
    assert subject_name("topic", "orders", True, None) == "orders-key"


# ------------------------------------------------------------------------------------- against a live server
@pytest.fixture
def tls_files(tmp_path):
    """A self-signed certificate for 127.0.0.1: (cert.pem, key.pem, store.p12 with password "changeit")."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_pem, key_pem, p12 = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "store.p12"
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"reg", key, cert, None, serialization.BestAvailableEncryption(b"changeit")
        )
    )
    return cert_pem, key_pem, p12


def _decodes_through(settings: dict, url: str, client_settings: dict | None = None) -> list:
    client = SchemaRegistryClient({"url": url, **(client_settings or {})})
    ids = register_versions(client, "t-value")
    converter = AvroConverter({"schema.registry.url": url, **settings}, False)
    ((_, run),) = converter.to_logical("t", pa.array([wire(ids[1], 1, record(1, 5))], pa.binary())).runs
    return run.array.to_pylist()


def test_basic_auth_user_info_against_a_registry_that_requires_it():
    with SchemaRegistryServer(users={"alice": "pw"}) as server:
        settings = {"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "alice:pw"}
        assert _decodes_through(settings, server.url, {"basic.auth.user.info": "alice:pw"}) == [record(1, 5)]
        wrong = AvroConverter(
            {
                "schema.registry.url": server.url,
                "basic.auth.credentials.source": "USER_INFO",
                "basic.auth.user.info": "alice:nope",
            },
            False,
        )
        with pytest.raises(ConfigError, match="Unauthorized .*check value.converter.basic.auth.credentials.source"):
            wrong.to_logical("t", pa.array([wire(1, 1, record(1, 5))], pa.binary()))


@pytest.mark.parametrize("store", ["pem", "pkcs12", "inline"])
def test_tls_truststores_as_confluent_names_them(tls_files, store):
    cert_pem, key_pem, p12 = tls_files
    settings = {
        "pem": {"schema.registry.ssl.truststore.location": str(cert_pem), "schema.registry.ssl.truststore.type": "PEM"},
        "pkcs12": {
            "schema.registry.ssl.truststore.location": str(p12),
            "schema.registry.ssl.truststore.type": "PKCS12",
            "schema.registry.ssl.truststore.password": "changeit",
        },
        "inline": {"schema.registry.ssl.truststore.certificates": cert_pem.read_text()},
    }[store]
    with SchemaRegistryServer(certfile=str(cert_pem), keyfile=str(key_pem)) as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert _decodes_through(settings, server.url, {"ssl.ca.location": str(cert_pem)}) == [record(1, 5)]


def test_a_registry_whose_certificate_is_not_trusted_is_refused(tls_files):
    cert_pem, key_pem, _ = tls_files
    with SchemaRegistryServer(certfile=str(cert_pem), keyfile=str(key_pem)) as server:
        client = SchemaRegistryClient({"url": server.url, "ssl.ca.location": str(cert_pem)})
        schema_id = client.register_schema("t-value", Schema(json.dumps(V1), "AVRO"))
        converter = AvroConverter({"schema.registry.url": server.url, "max.retries": "0"}, False)
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            converter.to_logical("t", pa.array([wire(schema_id, 1, record(1, 5))], pa.binary()))


def test_the_test_registry_speaks_the_registry_api():
    """Ids are global and stable, registering again returns the id, versions count per subject, 404 codes."""
    with SchemaRegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        first = register_versions(client, "a-value")
        assert first == {1: 1, 2: 2, 3: 3} and register_versions(client, "b-value") == first
        assert client.get_latest_version("b-value").version == 3
        assert client.lookup_schema("a-value", Schema(json.dumps(V1), "AVRO")).version == 1  # same content
        assert sorted(client.get_subjects()) == ["a-value", "b-value"]
        with pytest.raises(Exception) as error:
            client.get_schema(99)
        assert (error.value.http_status_code, error.value.error_code) == (404, 40403)
        assert ("GET", "/schemas/ids/99") in server.requests
