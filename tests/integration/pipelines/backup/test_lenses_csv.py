"""Issue 15 item 8: CSV both ways, as Lenses writes and reads it, with the real Kafka, S3 and Spark.

- Backup: a Lenses S3 sink statement ``STOREAS CSV_WITHHEADERS`` over struct values (JsonConverter with
  ``schemas.enable=true``) writes the bytes LS (lensesio/stream-reactor) ``formats/writer/CsvFormatWriter`` writes
  (opencsv ``CSVWriter`` defaults: the schema's field names first, every field quoted, a null field empty, ``\\n``
  after each row), under Lenses' names (item 6: ``<prefix>/<topic>/<partition>/<last offset>_<minTs>_<maxTs>.csv``).
- Restore: each line comes back as the value's text with the header row skipped, as LS
  ``formats/reader/CsvFormatStreamReader`` does — from that backup, and from a bucket in Lenses' own layout (LS
  ``sink/naming/FileNamer.scala``: ``<prefix>/<topic>/<partition>/<last offset %012d>_<minTs>_<maxTs>.csv``) read
  through a Lenses *source* statement.
"""

from __future__ import annotations

import json

import pytest

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
SCHEMA = {
    "type": "struct",
    "fields": [
        {"field": "name", "type": "string", "optional": False},
        {"field": "title", "type": "string", "optional": True},
        {"field": "salary", "type": "double", "optional": False},
        {"field": "age", "type": "int32", "optional": False},
    ],
}
USERS = [("sam", "mr", 100.43, 30), ("laura", "ms", 429.06, 41), ('tom "t"', None, 395.44, 7)]
HEADER = b'"name","title","salary","age"\n'
ROWS = [b'"sam","mr","100.43","30"', b'"laura","ms","429.06","41"', b'"tom ""t""",,"395.44","7"']


def _value(user) -> bytes:
    payload = dict(zip(("name", "title", "salary", "age"), user, strict=True))
    return json.dumps({"schema": SCHEMA, "payload": payload}).encode()


def test_lenses_csv_backup_writes_lenses_names_and_bytes_and_restores_the_rows(
    engine, make_config, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(1), fresh_topic(1)
    produce(topic, [{"value": _value(u)} for u in USERS])
    lenses = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:lenses SELECT * FROM {topic} STOREAS CSV_WITHHEADERS "
        "PROPERTIES('flush.count'=2)",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }
    _, sink = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in lenses.items()})
    summary = Backup(sink, engine=engine).run_once()
    assert summary.records == len(USERS)

    keys = [k for k in list_keys(s3_client, fresh_bucket, f"lenses/{topic}/") if k.endswith(".csv")]
    stamps = [r["timestamp"] for r in read_topic(kafka_bootstrap, topic)[0]]
    assert (
        keys
        == [  # Lenses' names (item 6): last offset, smallest and largest timestamp of each object's records
            f"lenses/{topic}/0/{last:012d}_{min(stamps[first : last + 1])}_{max(stamps[first : last + 1])}.csv"
            for first, last in ((0, 1), (2, 2))
        ]
    )
    bodies = [s3_client.get_object(Bucket=fresh_bucket, Key=k)["Body"].read() for k in keys]
    assert bodies == [HEADER + ROWS[0] + b"\n" + ROWS[1] + b"\n", HEADER + ROWS[2] + b"\n"]

    summary = restorer(fresh_bucket, topic, {**lenses, "topic.rename": f"{topic}:{target}"}).run()
    assert summary.records == len(USERS)
    assert [(r["key"], r["value"]) for r in read_topic(kafka_bootstrap, target)[0]] == [(None, row) for row in ROWS]


def test_lenses_layout_csv_bucket_restores_lines(restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source, target = f"users-{fresh_topic(1)}", fresh_topic(1)
    objects = {  # flush.count=2: offsets 0-1, then 2; names hold the last offset and the records' min/max timestamps
        f"in/{source}/0/000000000001_1700000000000_1700000001000.csv": HEADER + ROWS[0] + b"\n" + ROWS[1] + b"\n",
        f"in/{source}/0/000000000002_1700000002000_1700000002000.csv": HEADER + ROWS[2] + b"\n",
    }
    for key, body in objects.items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:in STOREAS CSV_WITHHEADERS",
    }

    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(ROWS)
    assert [(r["key"], r["value"]) for r in read_topic(kafka_bootstrap, target)[0]] == [(None, row) for row in ROWS]
