"""Issue 15 item 6 (B1): a Lenses sink statement with PARTITIONBY backs up into Lenses' partitioned names on the real
S3 (LS ``sink/naming/CloudKeyNamer.finalFilename``, ``FileNamer.TopicPartitionOffsetFileNamer.fileName``:
``<prefix>/key=<key>/<topic>(<partition>_<last offset %012d>).json``; ``config/PartitionSelection.apply``:
KeysAndValues by default), and a Lenses source config restores the envelope objects record-exact, each partition's
records back in offset order although they lie in several directories."""

from __future__ import annotations

import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/pb"
T0 = 1_700_000_000_000
# (partition, key, value, headers, timestamp): keys alternate, so a partition's records are spread over directories
RECORDS = [
    (0, b"a", b"v0", [("trace", b"t0")], T0 + 5),
    (0, b"b", b"v1", [], T0 + 1),
    (0, b"a", b"v2", [("trace", b"t2")], T0 + 9),
    (0, b"a/x", b"v3", [], T0 + 20),
    (1, b"b", b"w0", [("trace", b"x")], T0 + 100),
    (1, b"a", b"w1", [], T0 + 101),
]


def test_lenses_partitionby_backup_has_lenses_names_and_restores_record_exact(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(
        topic,
        [{"partition": p, "key": k, "value": v, "headers": h, "timestamp": ts} for p, k, v, h, ts in RECORDS],
    )
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} PARTITIONBY _key "
        "STOREAS `JSON` PROPERTIES('store.envelope'=true)",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }

    summary = backup(fresh_bucket, topic, sink)

    assert summary.records == len(RECORDS)
    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == sorted(
        [
            f"{PREFIX}/key=a/{topic}(0_000000000002).json",
            f"{PREFIX}/key=b/{topic}(0_000000000001).json",
            f"{PREFIX}/key=a-x/{topic}(0_000000000003).json",  # '/' in a value becomes '-'
            f"{PREFIX}/key=b/{topic}(1_000000000000).json",
            f"{PREFIX}/key=a/{topic}(1_000000000001).json",
        ]
    )

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true)",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in restored[partition]] == [
            (k, v, h, ts) for p, k, v, h, ts in RECORDS if p == partition
        ]


def test_lenses_padding_properties_pad_names_and_a_lenses_source_restores_them(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """LS ``config/padding/PaddingService``: ``padding.length.<field>`` replaces the default ``offset`` 12 with the
    fields listed; the partition directory (``CloudKeyNamer.buildPartitionPrefix``) and the offset are padded."""
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(
        topic,
        [{"partition": p, "key": k, "value": v, "headers": h, "timestamp": ts} for p, k, v, h, ts in RECORDS],
    )
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true, 'flush.count'=10, 'padding.length.partition'=3, 'padding.length.offset'=4)",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    assert backup(fresh_bucket, topic, sink).records == len(RECORDS)
    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == [
        f"{PREFIX}/{topic}/000/0003_{T0 + 1}_{T0 + 20}.json",
        f"{PREFIX}/{topic}/001/0001_{T0 + 100}_{T0 + 101}.json",
    ]
    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true)",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in restored[partition]] == [
            (k, v, h, ts) for p, k, v, h, ts in RECORDS if p == partition
        ]
