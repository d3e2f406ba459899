"""``kafka-s3 restore --dry-run``: the plan (topics, partitions, objects, bytes, record estimates) and the target
checks, printed; nothing produced, no topic created, no progress committed."""

from __future__ import annotations

import re

import pytest

from kafka_s3.io.kafka.admin import Admin
from tests.support.restore import (
    end_offsets,
    records,
    restore_progress,
    run_cli,
    write_properties,
)

pytestmark = pytest.mark.integration

JSON = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def test_dry_run_prints_the_plan_and_target_checks_and_produces_nothing(
    backup, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, tmp_path
):
    wide, narrow = fresh_topic(3), fresh_topic(1)
    produce(wide, records(3, 9))
    produce(narrow, records(1, 9))
    backup(fresh_bucket, [wide, narrow], JSON)
    small_target = fresh_topic(2)  # one partition short for `wide`
    missing_target = f"{narrow}-missing"
    raw, config = make_config(
        fresh_bucket,
        [wide, narrow],
        source=True,
        **{k.replace(".", "__"): v for k, v in JSON.items()},
        topic__rename=f"{wide}:{small_target},{narrow}:{missing_target}",
    )
    sizes = {}
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=fresh_bucket, Prefix="topics/t-"):
        for item in page.get("Contents", []):
            partition = int(re.search(r"\+(\d+)\+\d+\.json$", item["Key"]).group(1))
            topic = item["Key"].split("/")[1]
            sizes[(topic, partition)] = sizes.get((topic, partition), 0) + item["Size"]

    result = run_cli(["restore", "--config", str(write_properties(tmp_path / "r.properties", raw)), "--dry-run"])
    assert result.returncode == 6, result.stderr[-3000:]  # as the restore would: PlanError
    out = result.stdout
    lines = {line.split(":")[0]: line for line in out.splitlines() if " -> " in line}
    assert sorted(lines) == sorted(
        [f"{wide}[{p}] -> {small_target}[{p}]" for p in range(3)] + [f"{narrow}[0] -> {missing_target}[0]"]
    ), out
    for (topic, partition), size in sizes.items():
        target = small_target if topic == wide else missing_target
        line = lines[f"{topic}[{partition}] -> {target}[{partition}]"]
        assert f"3 objects, {size} bytes" in line and "offsets from 0, ~9 records, 1 directory" in line, line
    assert lines[f"{wide}[0] -> {small_target}[0]"].endswith("target: ok (2 partitions)")
    assert lines[f"{wide}[2] -> {small_target}[2]"].endswith("target: TOO FEW PARTITIONS (has 2, needs 3)")
    assert lines[f"{narrow}[0] -> {missing_target}[0]"].endswith("target: MISSING")
    assert f"total: 2 topics, 4 partitions, 12 objects, {sum(sizes.values())} bytes" in out
    assert "~36 records" in out
    assert f"the restore would fail: target topic '{small_target}' has 2 partitions" in out
    assert f"the restore would fail: target topic '{missing_target}' does not exist" in out
    assert "dry run: nothing was produced" in out

    assert end_offsets(kafka_bootstrap, small_target) == {0: 0, 1: 0}
    assert missing_target not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()
    assert restore_progress(kafka_bootstrap, config, wide, small_target) == {0: None, 1: None}


def test_dry_run_with_topic_creation_and_bounds(backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap):
    from kafka_s3.cli.render import describe_plan
    from kafka_s3.pipelines.read.options import RestoreOptions

    topic = fresh_topic(1)
    produce(topic, records(1, 10))
    backup(fresh_bucket, topic, JSON)
    target = f"{topic}-new"
    restore = restorer(
        fresh_bucket,
        topic,
        {**JSON, "topic.rename": f"{topic}:{target}", "topic.creation.enable": "true"},
        RestoreOptions(from_offsets={(None, 0): 4}, until_offsets={(topic, 0): 8}),
    )
    plan_set = restore.plan()
    restore.check_targets(plan_set, create=False)
    report = describe_plan(plan_set)
    line = next(line for line in report.splitlines() if " -> " in line)
    # objects start at 0, 3, 6, 9; the last one, a third of the size of the others, holds ~1 record
    assert "4 objects" in line and "~10 records" in line and "only offsets [4, 8)" in line, line
    assert line.endswith("target: missing, will be created with 1 partition"), line
    assert "would fail" not in report
    assert target not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()
