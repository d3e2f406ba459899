"""Issue 13 item 4: S3 over HTTPS with a private CA (``s3.ssl.ca.bundle``, or the ``AWS_CA_BUNDLE`` convention); a
certificate the client cannot verify is an error naming TLS certificate verification and the endpoint."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import StoreError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.verify import verify
from tests.support.security import JSON, records, run_cli, values_of, write_properties

pytestmark = pytest.mark.integration

PARTITIONS = 2
PER_PARTITION = 7


def store_config(secure_s3, **settings: str):
    raw = {
        "name": "https-tests",
        "topics": "t",
        "flush.size": "1",
        "format.class": "bytearray",
        "s3.retry.backoff.ms": "1",
    }
    return SINK.parse({**raw, **secure_s3.settings("admin"), **settings})


def test_backup_verify_restore_over_https_with_private_ca(
    secure_s3, secure_s3_config, engine, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    _, sink = secure_s3_config("admin", topic, **JSON)

    summary = Backup(sink, engine=engine).run_once()

    assert summary.records == PARTITIONS * PER_PARTITION
    listed = secure_s3.client().list_objects_v2(Bucket=secure_s3.bucket, Prefix=f"topics/{topic}/")
    assert len(listed.get("Contents", [])) == PARTITIONS * 3  # flush.size=3: 3, 3 and the flushed 1 per partition
    _, source = secure_s3_config("admin", topic, source=True, topic__rename=f"{topic}:{topic}-copy", **JSON)
    assert not verify(source, engine, deep=True).problems
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(f"{topic}-copy", PARTITIONS)
    restored = Restore(source, engine).run()
    assert restored.records == PARTITIONS * PER_PARTITION
    assert values_of(kafka_bootstrap, f"{topic}-copy") == values_of(kafka_bootstrap, topic)


def test_aws_ca_bundle_is_the_default_ca(secure_s3):
    config = store_config(secure_s3, **{"s3.ssl.ca.bundle": ""})
    spec = StoreSpec.from_config(config, {"AWS_CA_BUNDLE": str(secure_s3.ca_bundle)})
    store = spec.open()
    try:
        store.check()
        store.put("ca-bundle/env.bin", b"trusted through AWS_CA_BUNDLE")
        assert store.get("ca-bundle/env.bin") == b"trusted through AWS_CA_BUNDLE"
    finally:
        store.close()
    # the setting wins over the variable
    assert StoreSpec.from_config(store_config(secure_s3), {"AWS_CA_BUNDLE": "/nowhere.pem"}).ca_bundle == str(
        secure_s3.ca_bundle
    )


def tls_failure(secure_s3) -> str:
    return (
        f"TLS certificate verification failed for the object store at {secure_s3.endpoint}: its certificate is not "
        "signed by a CA this client trusts"
    )


@pytest.mark.parametrize("source", ["setting", "AWS_CA_BUNDLE", "system CAs"])
def test_untrusted_certificate_names_tls_verification_and_the_endpoint(secure_s3, source):
    environ: dict[str, str] = {}
    if source == "setting":
        config = store_config(secure_s3, **{"s3.ssl.ca.bundle": str(secure_s3.wrong_ca_bundle)})
    else:
        config = store_config(secure_s3, **{"s3.ssl.ca.bundle": ""})
        if source == "AWS_CA_BUNDLE":
            environ["AWS_CA_BUNDLE"] = str(secure_s3.wrong_ca_bundle)
    store = StoreSpec.from_config(config, environ).open()
    try:
        for operation in (store.check, lambda: store.put("tls/k.bin", b"x"), lambda: list(store.list("tls/"))):
            with pytest.raises(StoreError) as caught:
                operation()
            message = str(caught.value)
            assert tls_failure(secure_s3) in message
            assert "s3.ssl.ca.bundle" in message and "AWS_CA_BUNDLE" in message
            assert "attempt" not in message  # not retried: another attempt meets the same certificate
    finally:
        store.close()


def test_cli_reports_an_untrusted_certificate_on_one_line(secure_s3, make_config, tmp_path):
    settings = {**secure_s3.settings("backup"), "s3.ssl.ca.bundle": str(secure_s3.wrong_ca_bundle)}
    raw, _ = make_config(secure_s3.bucket, "any-topic", **{k.replace(".", "__"): v for k, v in settings.items()})
    result = run_cli(["backup", "--once", "--config", str(write_properties(tmp_path / "b.properties", raw))])

    assert result.returncode == 3, result.stderr[-3000:]
    assert tls_failure(secure_s3) in result.stderr
    assert "Traceback" not in result.stderr
    assert "secure-backup-secret" not in result.stderr + result.stdout


def test_missing_ca_bundle_file_is_a_config_error(secure_s3, tmp_path):
    from kafka_s3.core.errors import ConfigError

    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(ConfigError, match=r"s3.ssl.ca.bundle=.*no-such-ca.pem.*not a readable file") as caught:
        StoreSpec.from_config(store_config(secure_s3, **{"s3.ssl.ca.bundle": str(missing)}), {})
    assert caught.value.key == "s3.ssl.ca.bundle"
    with pytest.raises(ConfigError, match=r"AWS_CA_BUNDLE=.*no-such-ca.pem.*not a readable file"):
        StoreSpec.from_config(store_config(secure_s3, **{"s3.ssl.ca.bundle": ""}), {"AWS_CA_BUNDLE": str(missing)})


@pytest.mark.issue(31, 1)
def test_an_iceberg_catalogs_warehouse_over_https_is_verified_against_the_stores_ca_bundle(secure_s3, tmp_path):
    """The table's metadata and data files go through pyiceberg's file IO: it trusts the store's private CA
    (``s3.ssl.ca.bundle``), and a certificate of another CA is refused."""
    import uuid

    import pyarrow as pa

    from kafka_s3.io.iceberg import catalog_from_config

    rows = pa.table({"offset": pa.array([0, 1, 2], pa.int64())})
    outcomes = {}
    for name, bundle in (("store's CA", secure_s3.ca_bundle), ("another CA", secure_s3.wrong_ca_bundle)):
        config = SINK.parse(
            {
                "name": "https-lake",
                "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
                "topics": "t",
                "iceberg.tables": "lake.t",
                "iceberg.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}",
                "iceberg.catalog.warehouse": f"s3://{secure_s3.bucket}/iceberg-{uuid.uuid4().hex[:8]}",
                **secure_s3.settings("admin"),
                "s3.ssl.ca.bundle": str(bundle),
            }
        )
        catalog = catalog_from_config(config, {})
        namespace = "https_" + uuid.uuid4().hex[:8]
        catalog.create_namespace(namespace)
        try:
            table = catalog.create_table(f"{namespace}.t", schema=rows.schema)
            table.append(rows)
            outcomes[name] = table.scan().to_arrow().num_rows
        except OSError as exc:
            outcomes[name] = "NETWORK_CONNECTION" in str(exc) and "refused"
    assert outcomes == {"store's CA": 3, "another CA": "refused"}
