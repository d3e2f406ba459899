"""Issue 13 item 5: encryption at rest, through whole backups and restores against the real store (SeaweedFS) behind
a recording proxy: SSE-C round trip; SSE-S3 and SSE-KMS headers sent as configured (SeaweedFS has no KMS: the
SSE-KMS request is checked, and its refusal must be a clear error); the customer key is never printed."""

from __future__ import annotations

import base64
import hashlib

import pytest
from botocore.exceptions import ClientError

from kafka_s3.core.errors import StoreError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.verify import verify
from tests.support.faultproxy import FaultProxy
from tests.support.integration import list_keys
from tests.support.security import JSON, records, run_cli, values_of, write_properties

pytestmark = pytest.mark.integration

PARTITIONS = 2
PER_PARTITION = 5
CUSTOMER_KEY = bytes(range(100, 132))
CUSTOMER_KEY_B64 = base64.b64encode(CUSTOMER_KEY).decode()
SSE = "x-amz-server-side-encryption"
SSE_C = {
    f"{SSE}-customer-algorithm": "AES256",
    f"{SSE}-customer-key": CUSTOMER_KEY_B64,
    f"{SSE}-customer-key-md5": base64.b64encode(hashlib.md5(CUSTOMER_KEY).digest()).decode(),
}


@pytest.fixture
def proxy(s3_env):
    with FaultProxy(s3_env["endpoint_url"]) as recording:
        yield recording


def object_requests(proxy, bucket: str) -> list:
    """Requests on objects (not listings) of the bucket."""
    return [r for r in proxy.requests(path=f"^/{bucket}/.") if "tagging" not in r.query and r.method != "DELETE"]


def creating(requests) -> list:
    """PutObject and CreateMultipartUpload requests: the ones SSE-S3 and SSE-KMS headers go with."""
    return [r for r in requests if (r.method == "PUT" and "uploadId" not in r.query) or "uploads" in r.query]


def back_up_and_restore(engine, make_config, bucket, topic, kafka_bootstrap, settings: dict[str, str]):
    _, sink = make_config(bucket, topic, **JSON, **settings)
    assert Backup(sink, engine=engine).run_once().records == PARTITIONS * PER_PARTITION
    _, source = make_config(bucket, topic, source=True, topic__rename=f"{topic}:{topic}-copy", **JSON, **settings)
    assert not verify(source, engine, deep=True).problems
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(f"{topic}-copy", PARTITIONS)
    assert Restore(source, engine).run().records == PARTITIONS * PER_PARTITION
    assert values_of(kafka_bootstrap, f"{topic}-copy") == values_of(kafka_bootstrap, topic)


def test_sse_c_backup_verify_restore_round_trip(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, proxy, s3_client
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))

    settings = {"s3__sse__customer__key": CUSTOMER_KEY_B64, "store__url": proxy.url}
    back_up_and_restore(engine, make_config, fresh_bucket, topic, kafka_bootstrap, settings)

    requests = object_requests(proxy, fresh_bucket)
    assert {r.method for r in requests} >= {"PUT", "GET"}
    without = [(r.method, r.path) for r in requests if {n: r.headers.get(n) for n in SSE_C} != SSE_C]
    assert not without  # every write and read of an object carried the customer key
    data_key = next(k for k in list_keys(s3_client, fresh_bucket, f"topics/{topic}/") if k.endswith(".json"))
    with pytest.raises(ClientError) as refused:  # the store encrypted it: no read without the key
        s3_client.get_object(Bucket=fresh_bucket, Key=data_key)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_restore_without_the_customer_key_says_so(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, records(1, 3))
    _, sink = make_config(fresh_bucket, topic, **JSON, s3__sse__customer__key=CUSTOMER_KEY_B64)
    Backup(sink, engine=engine).run_once()
    _, source = make_config(fresh_bucket, topic, source=True, topic__rename=f"{topic}:{topic}-copy", **JSON)

    with pytest.raises(StoreError) as caught:
        Restore(source, engine).run()

    assert "s3.sse.customer.key" in str(caught.value)


def test_sse_s3_is_requested_on_every_object_and_round_trips(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, proxy
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))

    settings = {"s3__ssea__name": "AES256", "store__url": proxy.url}
    back_up_and_restore(engine, make_config, fresh_bucket, topic, kafka_bootstrap, settings)

    created = creating(object_requests(proxy, fresh_bucket))
    assert any(f"/topics/{topic}/" in r.path for r in created)
    assert all(r.headers.get(SSE) == "AES256" for r in created), [(r.path, r.headers.get(SSE)) for r in created]


def test_sse_kms_is_requested_as_configured_and_a_refusal_is_clear(
    engine, make_config, fresh_bucket, fresh_topic, produce, proxy
):
    topic = fresh_topic(1)
    produce(topic, records(1, 3))
    settings = {
        "s3__ssea__name": "aws:kms",
        "s3__sse__kms__key__id": "arn:aws:kms:us-east-1:111122223333:key/backup",
        "s3__part__retries": "0",
        "store__url": proxy.url,
    }
    _, sink = make_config(fresh_bucket, topic, **JSON, **settings)

    # this SeaweedFS has no KMS: it refuses the first write
    with pytest.raises(StoreError) as caught:
        Backup(sink, engine=engine).run_once()

    created = creating(object_requests(proxy, fresh_bucket))
    assert created
    for request in created:
        assert request.headers[SSE] == "aws:kms"
        assert request.headers[f"{SSE}-aws-kms-key-id"] == "arn:aws:kms:us-east-1:111122223333:key/backup"
    assert "s3.ssea.name=aws:kms" in str(caught.value) and "arn:aws:kms:us-east-1:111122223333:key/backup" in str(
        caught.value
    )


def test_the_customer_key_is_never_printed(make_config, fresh_bucket, fresh_topic, produce, tmp_path):
    topic = fresh_topic(1)
    produce(topic, records(1, 3))
    raw, _ = make_config(fresh_bucket, topic, **JSON, s3__sse__customer__key=CUSTOMER_KEY_B64)
    config = str(write_properties(tmp_path / "sse-c.properties", raw))

    outputs = [
        run_cli(["config", "show", "--config", config]),
        run_cli(["config", "show", "--json", "--config", config]),
        run_cli(["--debug", "backup", "--once", "--no-progress", "--config", config]),
        run_cli(["--debug", "status", "--config", config]),
    ]

    for result in outputs:
        assert result.returncode == 0, (result.args, result.stderr[-3000:])
        printed = result.stdout + result.stderr
        assert CUSTOMER_KEY_B64 not in printed
        assert SSE_C[f"{SSE}-customer-key-md5"] not in printed
    assert "[hidden]" in outputs[0].stdout
