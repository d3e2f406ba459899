"""Issue 15 item 2: ``timezone=EST`` (the Confluent seed's value) and fixed offsets back up into the directories
Confluent's TimeBasedPartitioner writes, and restore record-exact, on the real Kafka, S3 and Spark.

Expected directories from the peers' code, not ours: SC ``TimeBasedPartitioner.configure``/``encodePartition`` with
Joda ``DateTimeZone.forID`` (joda-time 2.13.1): ``EST`` is the tzdb link to America/Panama (``tz/src/northamerica``,
-05:00 all year), ``+05:30`` a fixed zone (``DateTimeZone.parseOffset``). Facts sheet A4: 2020-01-01T03:30:00Z,
hourly, EST → ``year=2019/month=12/day=31/hour=22``; ``+05:30`` → ``…/day=01/hour=09``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration


def utc_ms(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp() * 1000)


TIMES = [utc_ms(2020, 1, 1, 3, 30), utc_ms(2020, 7, 1, 12)]
CASES = {
    "EST": ["year=2019/month=12/day=31/hour=22", "year=2020/month=07/day=01/hour=07"],  # never DST (not New York)
    "+05:30": ["year=2020/month=01/day=01/hour=09", "year=2020/month=07/day=01/hour=17"],
}


@pytest.mark.parametrize("zone", list(CASES))
def test_joda_zone_ids_back_up_into_confluents_directories_and_restore_exactly(
    zone, backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(1), fresh_topic(1)
    produce(topic, [{"value": b"v%d" % n, "key": b"k%d" % n, "timestamp": t} for n, t in enumerate(TIMES)])
    properties = {
        "partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
        "locale": "en-US",
        "timezone": zone,
        "timestamp.extractor": "Record",
        "format.class": "json",
        "store.envelope": "true",
    }
    backup(fresh_bucket, topic, properties)

    data = sorted(k for k in list_keys(s3_client, fresh_bucket, f"topics/{topic}/") if k.endswith(".json"))
    assert data == [f"topics/{topic}/{d}/{topic}+0+{n:010d}.json" for n, d in enumerate(CASES[zone])]

    restorer(fresh_bucket, topic, {**properties, "topic.rename": f"{topic}:{target}"}).run()
    original, restored = read_topic(kafka_bootstrap, topic)[0], read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"], r["timestamp"]) for r in restored] == [
        (r["key"], r["value"], r["timestamp"]) for r in original
    ]
    assert [r["timestamp"] for r in restored] == TIMES
