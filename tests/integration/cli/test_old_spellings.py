"""Old command-line spellings against a real backup: ``read --topics T --format json`` prints what ``read --topic T
--json`` prints, exits as it does, and warns on stderr naming each new spelling (the real command in a subprocess,
the real Kafka broker and S3 server)."""

from __future__ import annotations

import json

import pytest

from tests.support.restore import records, run_cli, write_properties

pytestmark = [pytest.mark.integration, pytest.mark.issue(27)]


@pytest.fixture
def backed_up(make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path):
    """6 records of one partition backed up whole. Returns (topic, config file)."""
    topic = fresh_topic(1)
    produce(topic, records(1, 6))
    backup(fresh_bucket, topic, {"format.class": "json", "store.envelope": "true"})
    raw, _ = make_config(fresh_bucket, topic, source=True, format__class="json", store__envelope="true")
    return topic, str(write_properties(tmp_path / "read.properties", raw))


def test_an_old_spelling_of_read_prints_the_same_records_and_warns(backed_up):
    topic, path = backed_up
    read = ["read", "--config", path, "--offset", "0:1", "--count", "3"]
    old = run_cli([*read, "--topics", topic, "--format", "json"], timeout=180)
    new = run_cli([*read, "--topic", topic, "--json"], timeout=180)
    assert old.returncode == new.returncode == 0, old.stderr[-3000:]
    assert old.stdout == new.stdout
    assert [json.loads(line)["offset"] for line in new.stdout.splitlines()] == [1, 2, 3]
    warnings = [line for line in old.stderr.splitlines() if "deprecated" in line]
    assert warnings == [
        "kafka-s3: warning: --topics is deprecated; use --topic",
        "kafka-s3: warning: --format json is deprecated; use --json",
    ], old.stderr
    assert "deprecated" not in new.stderr
