"""Which topics a backup takes (``topics.regex``) and where it commits its progress (``group.id``, default
``connect-<name>`` as Kafka Connect names a sink's group)."""

from __future__ import annotations

import uuid

import pytest
from bk_helpers import data_keys, group_offsets

from kafka_s3.pipelines.backup.driver import Backup

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
