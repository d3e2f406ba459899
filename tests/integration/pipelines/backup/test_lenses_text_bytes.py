"""Issue 15 items 6/7: Lenses' ``STOREAS TEXT`` and ``STOREAS BYTES`` both ways, with the real Kafka, S3 (SeaweedFS)
and Spark.

What Lenses writes comes from its source (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``), never from
our writer:

- names: ``sink/naming/FileNamer.OffsetFileNamer.fileName`` under ``CloudKeyNamer``'s ``<prefix>/<topic>/<partition>/``
  (``<last offset %012d>_<smallest timestamp>_<largest timestamp>.<ext>``), the extension from
  ``config/FormatSelection`` (``TextFormatSelection.extension`` = ``text``, ``BytesFormatSelection.extension`` =
  ``bytes``; ``sink/naming/FileExtensionNamer.fileExtension`` keeps it for every format but JSON);
- TEXT bytes: ``formats/writer/TextFormatWriter.write``, each value's text then ``System.lineSeparator``
  (``LineSeparatorUtil``), a ``\\n`` inside a string written as ``\\\\n`` (``SinkData.StringSinkData.safeValue``);
- BYTES bytes: ``formats/writer/BytesFormatWriter.write``, the value's byte[] alone, one record per object
  (``sink/config/CloudSinkBucketOptions.validateCommitPolicyForBytesFormat``: flush.count 1);
- reading: ``formats/reader/TextStreamReader`` + ``converters/TextConverter`` (a line → a STRING value, no key),
  ``formats/reader/BytesStreamFileReader`` + ``converters/BytesOutputRowConverter`` (an object → a BYTES value).
"""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import PlanError
from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
T0 = 1_700_000_000_000


def _data_keys(s3_client, bucket: str, prefix: str) -> list[str]:
    return sorted(k for k in list_keys(s3_client, bucket, prefix) if "/_kafka-s3/" not in k)


def test_lenses_text_backup_writes_lenses_bytes_and_a_lenses_source_restores_the_values(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(1), fresh_topic(1)
    values = ["alpha", "caf\u00e9 \u2603", "", "back\\slash", "five"]
    stamps = [T0 + 3, T0 + 1, T0 + 2, T0 + 9, T0 + 4]
    produce(
        topic,
        [
            {"key": b"k%d" % i, "value": v.encode(), "timestamp": ts}
            for i, (v, ts) in enumerate(zip(values, stamps, strict=True))
        ],
    )
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:lenses SELECT * FROM {topic} STOREAS `TEXT` "
        "PROPERTIES('flush.count'=3)",
        "value.converter": STRING,
    }

    summary = backup(fresh_bucket, topic, sink)

    assert summary.records == len(values)
    expected = {
        f"lenses/{topic}/0/000000000002_{T0 + 1}_{T0 + 3}.text": "alpha\ncaf\u00e9 \u2603\n\n".encode(),
        f"lenses/{topic}/0/000000000004_{T0 + 4}_{T0 + 9}.text": b"back\\slash\nfive\n",
    }
    assert _data_keys(s3_client, fresh_bucket, "lenses/") == sorted(expected)
    for key, body in expected.items():
        assert s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read() == body, key

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:lenses STOREAS TEXT",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(values)
    restored = read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"]) for r in restored] == [(None, v.encode()) for v in values]

    # The sink configuration itself restores the bucket too (Lenses' layout detected under the prefix).
    again = fresh_topic(1)
    restore = restorer(fresh_bucket, topic, {**sink, "topic.rename": f"{topic}:{again}"})
    assert "Lenses" in restore.plan().layout
    assert restore.run().records == len(values)
    assert [r["value"] for r in read_topic(kafka_bootstrap, again)[0]] == [v.encode() for v in values]


def test_lenses_bytes_backup_one_object_per_record_and_a_lenses_source_restores_them(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(2), fresh_topic(2)
    records = [(0, b"\x00\xff\n\r raw", T0 + 5), (0, b"", T0 + 6), (1, b"\x89PNG\r\n\x1a\n", T0 + 7)]
    produce(topic, [{"partition": p, "key": b"k", "value": v, "timestamp": ts} for p, v, ts in records])
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:raw SELECT * FROM {topic} STOREAS BYTES "
        "PROPERTIES('flush.count'=1)",
        "value.converter": BYTE_ARRAY,
    }

    assert backup(fresh_bucket, topic, sink).records == len(records)

    expected = {
        f"raw/{topic}/0/000000000000_{T0 + 5}_{T0 + 5}.bytes": records[0][1],
        f"raw/{topic}/0/000000000001_{T0 + 6}_{T0 + 6}.bytes": b"",
        f"raw/{topic}/1/000000000000_{T0 + 7}_{T0 + 7}.bytes": records[2][1],
    }
    assert _data_keys(s3_client, fresh_bucket, "raw/") == sorted(expected)
    for key, body in expected.items():
        assert s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read() == body, key

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:raw STOREAS BYTES",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(records)
    restored = read_topic(kafka_bootstrap, target)
    assert [(r["key"], r["value"]) for r in restored[0]] == [(None, records[0][1]), (None, b"")]
    assert [(r["key"], r["value"]) for r in restored[1]] == [(None, records[2][1])]


def test_lenses_layout_text_and_bytes_buckets_restore_record_exact(
    restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    """Golden buckets as Lenses' sink lays them out (names from LS ``FileNamer.OffsetFileNamer`` and
    ``TopicPartitionOffsetFileNamer`` with a ``PARTITIONBY`` directory; TEXT lines ended by ``\\n`` as
    ``TextFormatWriter`` writes them, the last one without its line end as Lenses' source tolerates; BYTES objects
    one value each), read as LS ``TextStreamReader``/``BytesStreamFileReader`` read them."""
    text_topic, bytes_topic = f"logs-{fresh_topic(1)}", f"blobs-{fresh_topic(1)}"
    text_target, bytes_target = fresh_topic(1), fresh_topic(1)
    objects = {
        f"txt/{text_topic}/0/000000000001_1700000000000_1700000001000.text": b"first line\nsecond \\n line\n",
        f"txt/{text_topic}/0/000000000004_1700000002000_1700000004000.text": b"three\r\nfour\nfive",
        f"bin/region=eu/{bytes_topic}(0_000000000000).bytes": b"\x01\x02\n",
        f"bin/region=us/{bytes_topic}(0_000000000001).bytes": b"\xfe",
        ".indexes/lenses-sink/.locks/x/0.lock": b'{"owner":"o","committedOffset":1,"pendingState":null}',
    }
    for key, body in objects.items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)

    text = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {text_target} SELECT * FROM {fresh_bucket}:txt STOREAS `TEXT`",
    }
    assert restorer(fresh_bucket, text_topic, text).run().records == 5
    restored = read_topic(kafka_bootstrap, text_target)[0]
    assert [(r["key"], r["value"], r["headers"]) for r in restored] == [
        (None, v, []) for v in (b"first line", b"second \\n line", b"three", b"four", b"five")
    ]

    raw = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {bytes_target} SELECT * FROM {fresh_bucket}:bin STOREAS BYTES",
    }
    assert restorer(fresh_bucket, bytes_topic, raw).run().records == 2
    assert [r["value"] for r in read_topic(kafka_bootstrap, bytes_target)[0]] == [b"\x01\x02\n", b"\xfe"]


def test_lenses_text_value_with_a_line_break_is_counted_and_its_restore_refused(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """Lenses writes ``two\\nlines`` as ``two\\\\nlines`` (``StringSinkData.safeValue``) and a ``\\r`` raw, which its
    reader splits (``Source.getLines``): neither reads back as written, so the backup counts them and a restore
    refuses the object rather than produce other values."""
    topic, target = fresh_topic(1), fresh_topic(1)
    produce(topic, [{"value": v} for v in (b"fine", b"two\nlines", b"cr\rinside")])
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:lenses SELECT * FROM {topic} STOREAS TEXT",
        "value.converter": STRING,
    }
    assert backup(fresh_bucket, topic, sink).records == 3
    [key] = _data_keys(s3_client, fresh_bucket, "lenses/")
    assert s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read() == b"fine\ntwo\\nlines\ncr\rinside\n"

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:lenses STOREAS TEXT",
    }
    with pytest.raises(PlanError) as refused:
        restorer(fresh_bucket, topic, source).run()
    assert key in str(refused.value) and "2 records" in str(refused.value)
    assert read_topic(kafka_bootstrap, target)[0] == []
