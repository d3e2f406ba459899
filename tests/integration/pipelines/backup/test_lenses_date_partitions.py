"""Issue 15 item 6 (B1): Lenses' ``PARTITIONBY _date.<pattern>`` directories, backed up and restored with the real
Kafka, S3 (SeaweedFS) and Spark.

Names from LS (lensesio/stream-reactor) ``S3SinkTaskTest`` "partition by date": ``PARTITIONBY _date.uuuu,_date.LL,
_date.dd`` with ``'partition.include.keys'=false`` and 12-digit partition padding names objects
``<prefix>/2010/04/02/<topic>(000000000001_000000000000).json`` (``sink/config/PartitionField.DatePartitionField``:
``DateTimeFormatter.ofPattern``; ``sink/naming/FileNamer.TopicPartitionOffsetFileNamer``).
"""

from __future__ import annotations

import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
APRIL, JUNE = 1270188000000, 1340863200000  # 2010-04-02T06:00Z, 2012-06-28T06:00Z


def test_lenses_date_directories_back_up_and_restore(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(1), fresh_topic(1)
    values = [b'{"n":0}', b'{"n":1}', b'{"n":2}']
    produce(topic, [{"value": v, "timestamp": ts} for v, ts in zip(values, (APRIL, APRIL, JUNE), strict=True)])
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:streamReactorBackups SELECT * FROM {topic} "
        "PARTITIONBY _date.uuuu,_date.LL,_date.dd STOREAS `JSON` PROPERTIES('flush.count'=1, "
        "'padding.length.partition'='12', 'padding.length.offset'='12', 'partition.include.keys'=false)",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }

    assert backup(fresh_bucket, topic, sink).records == 3

    keys = sorted(k for k in list_keys(s3_client, fresh_bucket, "streamReactorBackups/") if "/_kafka-s3/" not in k)
    assert keys == [
        f"streamReactorBackups/2010/04/02/{topic}(000000000000_000000000000).json",
        f"streamReactorBackups/2010/04/02/{topic}(000000000000_000000000001).json",
        f"streamReactorBackups/2012/06/28/{topic}(000000000000_000000000002).json",
    ]
    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:streamReactorBackups STOREAS `JSON`",
    }
    assert restorer(fresh_bucket, topic, source).run().records == 3
    assert [r["value"] for r in read_topic(kafka_bootstrap, target)[0]] == values
