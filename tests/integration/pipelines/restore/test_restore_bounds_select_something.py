"""Restore bounds that cannot select what they say are errors before anything happens (issue 26, finding 6).

A bound naming a partition or a topic the backup does not hold, a start offset past the backup's end, a time window
no backed-up record falls in (seconds typed where milliseconds are meant, among others): each is a configuration
error (exit 2) naming the flag and what the backup holds — before Spark starts and before any topic is created,
never an empty or whole restore with exit 0.
"""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets, parse_time
from tests.support.restore import records, run_cli, write_properties

pytestmark = pytest.mark.integration

BASE_TS = 1_700_000_000_000  # 2023-11-14T22:13:20Z; records a second apart
EXACT = {"store.envelope": "true", "flush.size": 50}


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(2)
    produce(topic, records(2, 100, base_ts=BASE_TS))
    backup(fresh_bucket, topic, EXACT)
    return topic


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--from-offset", "9:0", "partition 9"),
        ("--until-offset", "{topic}:7:10", "partition 7"),
        ("--from-offset", "nosuch:0:0", "topic 'nosuch'"),
        ("--from-offset", "0:5000", "past the backup's end"),
        ("--until-timestamp", "1970-01-02", "no backed-up record"),
        ("--from-timestamp", "2100-01-01", "no backed-up record"),
        ("--until-timestamp", str(BASE_TS // 1000), "seconds"),
    ],
)
def test_bounds_that_select_nothing_are_refused_before_anything_is_created(
    backed_up, make_config, fresh_bucket, kafka_bootstrap, tmp_path, flag, value, said
):
    target = f"{backed_up}-copy"
    raw, _ = make_config(fresh_bucket, backed_up, source=True, store__envelope="true", topic__creation__enable="true")
    raw["topic.rename"] = f"{backed_up}:{target}"
    path = write_properties(tmp_path / "restore.properties", raw)
    result = run_cli(["restore", "-c", str(path), "--no-progress", flag, value.format(topic=backed_up)])
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"kafka-s3: error: {flag}" in result.stderr and said in result.stderr, result.stderr[-3000:]
    assert "spark session ready" not in result.stderr
    assert target not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()


def test_a_window_that_selects_some_records_restores_them(backed_up, restorer, fresh_bucket, fresh_topic):
    target = fresh_topic(2)
    until = RestoreOptions(
        until_timestamp=parse_time(str(BASE_TS + 10_000)), from_offsets=parse_offsets("1:3", "--from-offset")
    )
    summary = restorer(fresh_bucket, backed_up, {**EXACT, "topic.rename": f"{backed_up}:{target}"}, until).run()
    assert summary.records == 10 + 7  # partition 0: offsets 0..9; partition 1: offsets 3..9


def test_the_python_api_raises_the_same_configuration_error(backed_up, restorer, fresh_bucket):
    with pytest.raises(ConfigError, match=r"--from-offset 0:5000 .*past the backup's end"):
        restorer(fresh_bucket, backed_up, EXACT, RestoreOptions(from_offsets={(None, 0): 5000})).plan()
