"""block_gzip end to end (backup, gzip -d, index, bounded restore and DataFrame reads), and a backup driven by KCQL."""

from __future__ import annotations

import json
import subprocess

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.peers.lenses.config import split_statements
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.backup.group import BackupGroup
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.integration import list_keys, stable_end_offsets

pytestmark = pytest.mark.integration


def line(i: int) -> bytes:
    return b"event %03d" % i


def read_all(bootstrap, topic, partition=0):
    end = stable_end_offsets(bootstrap, [(topic, partition)])[(topic, partition)]
    return to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, partition, 0, end)))


def test_block_gzip_backup_restore_and_dataframe(
    spark, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, [{"value": line(i)} for i in range(40)])
    settings = {
        "format__class": "com.deviantart.kafka_connect_s3.BlockGZIPFormat",
        "flush__size": "20",
        "compressed_block_size": "50",
    }
    _, sink = make_config(fresh_bucket, topic, **settings)
    summary = Backup(sink, engine=engine).run_once()
    assert summary.records == 40 and summary.objects == 2

    base = [f"topics/{topic}/partition=0/{topic}+0+{start:010d}" for start in (0, 20)]
    assert list_keys(s3_client, fresh_bucket, f"topics/{topic}/") == sorted(
        b + ext for b in base for ext in (".gz", ".index")
    )
    manifests = [k for k in list_keys(s3_client, fresh_bucket, "topics/_kafka-s3/") if k.endswith(".chunk")]
    manifest = json.loads(s3_client.get_object(Bucket=fresh_bucket, Key=manifests[0])["Body"].read())
    assert [(f["kind"], f["key"]) for f in manifest["files"]] == [
        ("data", base[0] + ".gz"),
        ("index", base[0] + ".index"),
    ]

    # The whole object is a gzip file the system tool reads; the index lists its blocks by byte range and offset.
    body = s3_client.get_object(Bucket=fresh_bucket, Key=base[1] + ".gz")["Body"].read()
    local = tmp_path / f"{topic}+0+0000000020.gz"
    local.write_bytes(body)
    subprocess.run(["gzip", "-d", str(local)], check=True)
    assert local.with_suffix("").read_bytes() == b"".join(line(i) + b"\n" for i in range(20, 40))
    chunks = json.loads(s3_client.get_object(Bucket=fresh_bucket, Key=base[1] + ".index")["Body"].read())["chunks"]
    assert [(c["first_record_offset"], c["num_records"]) for c in chunks] == [(20, 5), (25, 5), (30, 5), (35, 5)]
    assert sum(c["byte_length"] for c in chunks) == len(body)

    # A restore bounded by offsets (into another topic).
    target = f"copy_of_{topic}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(target, 1)
    _, source = make_config(fresh_bucket, topic, source=True, topic__rename=f"{topic}:{target}", **settings)
    options = RestoreOptions(from_offsets={(None, 0): 23}, until_offsets={(None, 0): 27})
    restored = Restore(source, engine, options).run()
    assert restored.records == 4
    assert [r["value"] for r in read_all(kafka_bootstrap, target)] == [line(i) for i in range(23, 27)]

    # The DataFrame reader, bounded the same way.
    raw = {k: str(v) for k, v in source.originals.items()}
    df = (
        spark.read.format("kafka-s3").options(**raw).option("from.offset", "0:23").option("until.offset", "0:27").load()
    )
    assert [(r.offset, bytes(r.value)) for r in df.orderBy("offset").collect()] == [(i, line(i)) for i in range(23, 27)]
    everything = spark.read.format("kafka-s3").options(**raw).load()
    assert everything.count() == 40


def test_backup_driven_only_by_kcql_statements(
    engine, fresh_bucket, fresh_topic, produce, s3_client, s3_env, kafka_bootstrap
):
    orders, clicks = fresh_topic(1, prefix="orders"), fresh_topic(1, prefix="clicks")
    regions = ["eu", "us", "eu", "eu", "us"]
    produce(orders, [{"value": b"order %d" % i, "headers": [("region", r.encode())]} for i, r in enumerate(regions)])
    produce(clicks, [{"value": b"click %d" % i, "key": b"user-%d" % (i % 2)} for i in range(4)])
    raw = {
        "name": f"kcql-{fresh_bucket}",
        "connector.class": "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector",
        "bootstrap.servers": kafka_bootstrap,
        "aws.custom.endpoint": s3_env["endpoint_url"],
        "aws.region": s3_env["region"],
        "aws.access.key": s3_env["access_key"],
        "aws.secret.key": s3_env["secret_key"],
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",  # Lenses' TEXT writes strings
        KCQL_KEY: (
            f"INSERT INTO {fresh_bucket}:lenses/orders SELECT * FROM {orders} PARTITIONBY _header.region "
            f"STOREAS `TEXT` WITH_FLUSH_COUNT = 10;\n"
            f"INSERT INTO {fresh_bucket}:lenses/clicks SELECT * FROM {clicks} PARTITIONBY _key "
            f"STOREAS `block_gzip` WITHPARTITIONER KeysAndValues WITH_FLUSH_COUNT 2"
        ),
    }
    configs = [SINK.parse(statement) for statement in split_statements(raw)]
    summary = BackupGroup(configs, engine=engine).run_once()
    assert summary.records == 9

    # STOREAS TEXT under Lenses' sink class: Lenses' partitioned names and TEXT lines (LS TextFormatWriter)
    assert [k for k in list_keys(s3_client, fresh_bucket, "lenses/orders/") if "/_kafka-s3/" not in k] == [
        f"lenses/orders/region=eu/{orders}(0_000000000003).text",
        f"lenses/orders/region=us/{orders}(0_000000000004).text",
    ]
    eu = s3_client.get_object(Bucket=fresh_bucket, Key=f"lenses/orders/region=eu/{orders}(0_000000000003).text")
    assert eu["Body"].read() == b"order 0\norder 2\norder 3\n"
    clicks_keys = list_keys(s3_client, fresh_bucket, f"lenses/clicks/{clicks}/")
    assert clicks_keys == sorted(
        f"lenses/clicks/{clicks}/_key=user-{i % 2}/{clicks}+0+{start:010d}{ext}"
        for i, start in ((0, 0), (1, 1), (0, 2), (1, 3))
        for ext in (".gz", ".index")
    )  # 2 records per chunk
    assert list_keys(s3_client, fresh_bucket, "lenses/orders/_kafka-s3/")  # manifests under each statement's prefix
    # Both statements commit to the one consumer group of the connector.
    committed = Admin({"bootstrap.servers": kafka_bootstrap}).group_offsets(
        f"connect-{raw['name']}", [(orders, 0), (clicks, 0)]
    )
    assert committed == {(orders, 0): 5, (clicks, 0): 4}
