"""Which topics a backup takes (``topics.regex``) and where it commits its progress (``group.id``, default
``connect-<name>`` as Kafka Connect names a sink's group)."""

from __future__ import annotations

import uuid

import pytest

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import data_keys, group_offsets

pytestmark = pytest.mark.integration


def test_topics_regex_selects_the_matching_topics_and_group_id_overrides_the_group(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    stem = f"sel{uuid.uuid4().hex[:8]}"
    orders, clicks = fresh_topic(1, prefix=f"{stem}-orders"), fresh_topic(2, prefix=f"{stem}-clicks")
    unrelated = fresh_topic(1, prefix=f"x{stem}")  # contains the stem, but the regex must match the whole name
    for topic in (orders, clicks, unrelated):
        produce(topic, [{"partition": i % 2 if topic == clicks else 0, "value": b'{"i":%d}' % i} for i in range(4)])
    _, config = make_config(
        fresh_bucket, "", topics__regex=f"{stem}-(orders|clicks)-.*", group__id=f"{stem}-group", flush__size="2"
    )

    summary = Backup(config, engine=engine).run_once()

    assert summary.records == 8
    assert len(data_keys(s3_client, fresh_bucket, orders)) == 2 and len(data_keys(s3_client, fresh_bucket, clicks)) == 2
    assert data_keys(s3_client, fresh_bucket, unrelated) == []
    assert group_offsets(kafka_bootstrap, f"{stem}-group", orders, 1) == {0: 4}
    assert group_offsets(kafka_bootstrap, f"{stem}-group", clicks, 2) == {0: 2, 1: 2}
    assert group_offsets(kafka_bootstrap, f"connect-{config['name']}", orders, 1) == {0: None}


def test_the_per_cycle_cap_bounds_each_cycle_to_the_chunk_open_at_the_cap(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client
):
    topic = fresh_topic(1)
    produce(topic, [{"value": b'{"i":%d}' % i} for i in range(100)])
    _, config = make_config(fresh_bucket, topic, flush__size="10", max__records__per__partition__per__cycle="25")
    reads = []
    backup = Backup(
        config, engine=engine, on_cycle=lambda report, results: reads.extend((r.start, r.read_until) for r in results)
    )

    summary = backup.run_once()

    # A cycle reads the cap, then completes the chunk open there (chunks never span cycles), and commits it.
    assert reads == [(0, 30), (30, 60), (60, 90), (90, 100)]
    assert len(summary.cycles) == 4 and summary.records == 100
    assert len(data_keys(s3_client, fresh_bucket, topic)) == 10


@pytest.mark.issue(17)
def test_backup_leaves_out_the_restores_offset_map_topic(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, caplog
):
    """Issue 17: the restores' offset-map topic (``restore.offset.map.topic``) is kafka-s3's own bookkeeping of the
    target cluster: a backup whose ``topics.regex`` matches it leaves it out, as Kafka's internal topics, and says
    so."""
    stem = f"om{uuid.uuid4().hex[:8]}"
    data, offset_map = fresh_topic(1, prefix=f"{stem}-data"), fresh_topic(1, prefix=f"{stem}-map")
    produce(data, [{"value": b'{"i":%d}' % i} for i in range(4)])
    produce(offset_map, [{"key": b"restore", "value": b'{"ranges":[[0,4,37]]}'}])
    _, config = make_config(
        fresh_bucket, "", topics__regex=f"{stem}-.*", restore__offset__map__topic=offset_map, flush__size="2"
    )

    with caplog.at_level("INFO"):
        backup = Backup(config, engine=engine)
        summary = backup.run_once()
        backup.run_once()  # said once, not every cycle

    assert summary.records == 4
    assert len(data_keys(s3_client, fresh_bucket, data)) == 2
    assert data_keys(s3_client, fresh_bucket, offset_map) == []
    said = [r.getMessage() for r in caplog.records if offset_map in r.getMessage()]
    assert said == [
        f"topics.regex matches {offset_map}, a topic of the restores' own (restore.offset.map.topic, "
        "restore.lease.topic): not backed up"
    ], said
