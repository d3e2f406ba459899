"""Confluent's backup-and-restore quickstart: 9 records, flush.size=3, restored with RegexRouter to copy_of_<topic>."""

from __future__ import annotations

import pytest

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.integration import quickstart_values, stable_end_offsets

pytestmark = pytest.mark.integration


def read_all(bootstrap, topic, partition=0):
    end = stable_end_offsets(bootstrap, [(topic, partition)])[(topic, partition)]
    return to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, partition, 0, end)))


@pytest.mark.parametrize("fmt", ["avro", "json", "bytearray"])
def test_restore_quickstart_with_regex_router(
    fmt, engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(1, prefix="s3_topic")
    with_schema = fmt == "avro"
    values = quickstart_values(with_schema)
    produce(topic, [{"value": v} for v in values])
    converter = (
        {
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": str(with_schema).lower(),
        }
        if fmt != "bytearray"
        else {}
    )
    properties = {"format.class": fmt, **converter}
    _, sink = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})
    Backup(sink, engine=engine).run_once()

    target = f"copy_of_{topic}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(target, 1)
    _, source = make_config(
        fresh_bucket,
        topic,
        source=True,
        **{k.replace(".", "__"): v for k, v in properties.items()},
        transforms="AddPrefix",
        transforms__AddPrefix__type="org.apache.kafka.connect.transforms.RegexRouter",
        transforms__AddPrefix__regex=".*",
        transforms__AddPrefix__replacement="copy_of_$0",
    )
    summary = Restore(source, engine=engine).run()
    assert summary.records == 9
    restored = read_all(kafka_bootstrap, target)
    if fmt == "bytearray":
        assert [r["value"] for r in restored] == values  # raw bytes, byte for byte
    else:
        import json

        assert [json.loads(r["value"]) for r in restored] == [json.loads(v) for v in values]
    # A second run restores nothing (the progress is committed with the records).
    again = Restore(source, engine=engine).run()
    assert again.records == 0
    assert len(read_all(kafka_bootstrap, target)) == 9
