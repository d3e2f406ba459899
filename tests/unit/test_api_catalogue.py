"""``kafka_s3.ls`` / ``kafka_s3.info`` given a configuration instead of a location (issue 29 item 5): its bucket, its
store settings, and its own backup named."""

from __future__ import annotations

import pytest

import kafka_s3
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import BucketNotFoundError, ConfigError
from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore
from kafka_s3.io.stores.spec import StoreSpec


@pytest.fixture
def config(tmp_path) -> dict[str, str]:
    raw = {"name": "orders-backup", "topics": "orders", "flush.size": "1", "format.class": "json"}
    raw.update({"s3.bucket.name": "b", "store.url": f"file://{tmp_path}", "topics.dir": "prod/topics"})
    store = StoreSpec.from_config(SINK.parse(raw)).open()
    store.create_bucket()
    for root in ("prod/topics", "staging"):
        key = f"{root}/orders/partition=0/orders+0+0000000000.json"
        manifest = Manifest("orders", 0, 0, 1, (FileEntry(key, "data", 2, 0, 1, 4),))
        ManifestStore(store, f"{root}/_kafka-s3/json").create(manifest)
        store.put(key, b"{}\n{}\n")
    return raw


@pytest.mark.issue(29, item=5)
def test_ls_with_a_configuration_lists_its_bucket_and_names_its_own_backup(config):
    entries = kafka_s3.ls(config=config)
    assert [(e.topics_dir, e.name) for e in entries] == [("prod/topics", "orders-backup"), ("staging", None)]
    assert kafka_s3.info(config=config).entry.topics_dir == "prod/topics"


@pytest.mark.issue(29, item=5)
def test_a_location_must_be_s3_and_the_bucket_must_exist(config):
    with pytest.raises(ConfigError, match="not an s3://BUCKET"):
        kafka_s3.ls("gs://b")
    with pytest.raises(ConfigError, match="name the bucket"):
        kafka_s3.ls()
    with pytest.raises(BucketNotFoundError):
        kafka_s3.ls("s3://absent", config=config)
