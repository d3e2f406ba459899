"""Issue 13 item 4: least privilege. A backup identity with Read + Write + List on its bucket only and a restore
identity with Read + List only back up, verify and restore; nothing asks for bucket creation, deletion or the list
of all buckets; an identity lacking a right gets an error naming the S3 action and the object."""

from __future__ import annotations

import uuid

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import StoreAccessDeniedError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.stores.spec import open_store
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.verify import verify
from tests.support.faultproxy import FaultProxy
from tests.support.security import JSON, records, values_of

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
PARTITIONS = 2
PER_PARTITION = 7


@pytest.fixture
def recording_proxy(secure_s3):
    """A recording proxy in front of the HTTPS store (the client speaks HTTP to it; it speaks HTTPS upstream)."""
    with FaultProxy(secure_s3.endpoint, ca_bundle=str(secure_s3.ca_bundle)) as proxy:
        yield proxy


def operation(request, bucket: str) -> str:
    """The S3 operation of a recorded request, as far as the tests need to tell them apart."""
    path = request.path.split("?")[0]
    if path in ("", "/"):
        return "ListBuckets"
    if path.rstrip("/") == f"/{bucket}":  # a bucket-level request
        return {"PUT": "CreateBucket", "DELETE": "DeleteBucket", "HEAD": "HeadBucket"}.get(request.method, "Bucket")
    return "Object"


def test_least_privilege_identities_back_up_verify_and_restore(
    secure_s3, secure_s3_config, recording_proxy, engine, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    through_proxy = {"store__url": recording_proxy.url}
    _, sink = secure_s3_config("backup", topic, **JSON, **through_proxy)

    assert Backup(sink, engine=engine).run_once().records == PARTITIONS * PER_PARTITION

    _, source = secure_s3_config(
        "restore", topic, source=True, topic__rename=f"{topic}:{topic}-copy", **JSON, **through_proxy
    )
    assert not verify(source, engine, deep=True).problems
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(f"{topic}-copy", PARTITIONS)
    assert Restore(source, engine).run().records == PARTITIONS * PER_PARTITION
    assert values_of(kafka_bootstrap, f"{topic}-copy") == values_of(kafka_bootstrap, topic)
    seen = {operation(r, secure_s3.bucket) for r in recording_proxy.requests()}
    assert seen <= {"HeadBucket", "Bucket", "Object"}, seen  # Bucket: ListObjectsV2 (GET /bucket?list-type=2)
    refused = [(r.method, r.path, r.query) for r in recording_proxy.requests() if r.status == 403]
    assert not refused  # not even a best-effort request was refused


def store_as(secure_s3, identity: str, bucket: str | None = None, **settings: str):
    raw = {"name": "lp", "topics": "t", "flush.size": "1", "format.class": "bytearray", "s3.retry.backoff.ms": "1"}
    config = SINK.parse({**raw, **secure_s3.settings(identity), **settings})
    store = (
        open_store(config) if bucket is None else open_store(SINK.parse({**config.originals, "s3.bucket.name": bucket}))
    )
    return store


def denied(secure_s3, action: str, where: str, call) -> str:
    with pytest.raises(StoreAccessDeniedError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(f"AccessDenied on {action} for s3://{where}"), message
    assert secure_s3.endpoint in message
    assert all(i.secret_key not in message for i in secure_s3.identities.values())
    return message


def test_a_missing_right_names_the_s3_action_and_the_object(secure_s3):
    key = f"topics/lp-{uuid.uuid4().hex[:8]}/partition=0/k.bin"
    backup = store_as(secure_s3, "backup", **{"s3.part.size": str(5 * MiB)})
    restore = store_as(secure_s3, "restore", **{"s3.part.size": str(5 * MiB)})
    elsewhere = store_as(secure_s3, "backup", bucket=secure_s3.other_bucket)
    try:
        backup.put(key, b"written by the backup identity")
        bucket = secure_s3.bucket

        message = denied(secure_s3, "s3:PutObject", f"{bucket}/{key}.2", lambda: restore.put(f"{key}.2", b"x"))
        assert "access key id 'secure-restore'" in message
        denied(secure_s3, "s3:PutObject", f"{bucket}/{key}.3", lambda: restore.put(f"{key}.3", b"x" * (6 * MiB)))
        denied(secure_s3, "s3:DeleteObject", f"{bucket}/{key}", lambda: restore.delete([key]))
        denied(secure_s3, "s3:PutObjectTagging", f"{bucket}/{key}", lambda: backup.put_tags(key, {"a": "b"}))
        denied(secure_s3, "s3:CreateBucket", bucket, backup.create_bucket)
        other = secure_s3.other_bucket
        denied(secure_s3, "s3:ListBucket", f"{other}/topics/", lambda: list(elsewhere.list("topics/")))
        denied(secure_s3, "s3:GetObject", f"{other}/{key}", lambda: elsewhere.get(key))
        denied(secure_s3, "s3:GetObject", f"{other}/{key}", lambda: elsewhere.head(key))
        denied(secure_s3, "s3:ListBucket", other, elsewhere.check)
        assert restore.get(key) == b"written by the backup identity"
    finally:
        for store in (backup, restore, elsewhere):
            store.close()


def test_a_backup_with_the_restore_identity_names_s3_putobject(secure_s3_config, fresh_topic, engine):
    topic = fresh_topic(1)
    _, sink = secure_s3_config("restore", topic, **JSON)

    with pytest.raises(StoreAccessDeniedError) as caught:
        Backup(sink, engine=engine).run_once()

    assert str(caught.value).startswith("AccessDenied on s3:PutObject for s3://least-privilege/topics/_kafka-s3/")
