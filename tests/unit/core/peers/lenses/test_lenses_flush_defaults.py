"""Issue 15 (B6, Lenses' flush settings): under Lenses' sink class, a statement without ``flush.size`` /
``flush.interval`` gets Lenses' defaults (LS ``sink/config/FlushSettings``: ``defaultFlushSize = 500000000L``,
``defaultFlushInterval = 3600.seconds``, ``defaultFlushCount = 50000L``), and the interval counts as Lenses'
``Interval`` condition counts it (LS ``sink/commit/CommitPolicyConditions.Interval``: wall time since the file was
opened or last flushed, not Confluent's midnight-aligned schedule): ``rotate.schedule.anchor=open``.
"""

from __future__ import annotations

import subprocess
import sys

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def lenses(kcql: str, **settings: str):
    raw = {"name": "lenses-sink", "connector.class": LENSES_SINK, KCQL_KEY: kcql, "value.converter": STRING}
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return SINK.parse(raw)


def test_lenses_statement_without_flush_settings_gets_lenses_defaults():
    config = lenses("INSERT INTO b:p SELECT * FROM t STOREAS JSON")
    assert config["flush.size"] == 50000
    assert config["rotate.size.bytes"] == 500_000_000
    assert config["rotate.schedule.interval.ms"] == 3_600_000
    assert config["rotate.schedule.anchor"] == "open"


def test_explicit_lenses_flush_interval_counts_from_the_object_opening():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON "
        "PROPERTIES('flush.interval'=2, 'flush.size'=1000, 'flush.count'=7)"
    )
    assert (config["flush.size"], config["rotate.size.bytes"]) == (7, 1000)
    assert config["rotate.schedule.interval.ms"] == 2000
    assert config["rotate.schedule.anchor"] == "open"


def test_lenses_defaults_yield_to_the_files_own_settings():
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON",
        rotate__size__bytes="123456",
        rotate__schedule__interval__ms="60000",
    )
    assert (config["rotate.size.bytes"], config["rotate.schedule.interval.ms"]) == (123456, 60000)
    assert config["rotate.schedule.anchor"] == "open"


def test_kcql_without_lenses_class_and_plain_configs_keep_confluents_schedule():
    raw = {"name": "n", KCQL_KEY: "INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('flush.interval'=30)"}
    config = SINK.parse(raw)
    assert config["rotate.schedule.interval.ms"] == 30000
    assert config["rotate.schedule.anchor"] == "day"
    assert config["rotate.size.bytes"] == -1
    plain = SINK.parse({"name": "n", "topics": "t", "s3.bucket.name": "b", "format.class": "json", "flush.size": "3"})
    assert (plain["rotate.schedule.interval.ms"], plain["rotate.schedule.anchor"]) == (-1, "day")


def test_config_show_prints_the_lenses_defaults(tmp_path):
    path = tmp_path / "lenses.properties"
    path.write_text(
        "name=lenses-sink\n"
        f"connector.class={LENSES_SINK}\n"
        f"value.converter={STRING}\n"
        f"{KCQL_KEY}=INSERT INTO b:p SELECT * FROM t STOREAS JSON\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", "config", "show", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines() if line.strip()}
    assert rows["rotate.size.bytes"][1] == "500000000"
    assert rows["rotate.schedule.interval.ms"][1] == "3600000"
    assert rows["rotate.schedule.anchor"][1] == "open"
    assert rows["flush.size"][1] == "50000"


def test_lenses_flush_values_at_or_below_zero_mean_the_default():
    """LS ``FlushSettings``: ``Option(kcql.getWithFlush...).filter(_ > 0)...getOrElse(default...)``."""
    config = lenses(
        "INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('flush.count'=0, 'flush.size'=-1, 'flush.interval'=0)"
    )
    assert config["flush.size"] == 50000
    assert config["rotate.size.bytes"] == 500_000_000
    assert config["rotate.schedule.interval.ms"] == 3_600_000


def test_flush_values_below_one_stay_refused_without_lenses_class():
    import pytest

    from kafka_s3.core.errors import ConfigError

    with pytest.raises(ConfigError, match="flush.interval"):
        SINK.parse(
            {"name": "n", KCQL_KEY: "INSERT INTO b:p SELECT * FROM t STOREAS JSON PROPERTIES('flush.interval'=0)"}
        )
