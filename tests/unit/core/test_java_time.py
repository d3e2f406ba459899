"""Issue 15 item 6 (B1): ``PARTITIONBY _date.<pattern>`` directories as Lenses names them, beyond ``y M d H m s``.

Lenses formats the record timestamp with ``DateTimeFormatter.ofPattern(pattern).withZone(<JVM zone>)`` (LS
``kafka-connect-cloud-common/.../sink/config/PartitionField.DatePartitionField.formatter``). The expected texts are
the JVM's own: ``java_time_golden/golden.tsv`` was printed by OpenJDK 17 from ``java_time_golden/DatePatterns.java``
(``java -Duser.language=en DatePatterns.java < patterns.txt > golden.tsv``), never by our printer. LS's own test
``S3SinkTaskTest`` "partition by date" (``PARTITIONBY _date.uuuu,_date.LL,_date.dd``, records at 06:00 UTC on
2010-04-02 and 2012-06-28) expects ``2010/04/02/…`` and ``2012/06/28/…``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.peers.lenses.policy import lenses_date_printer
from kafka_s3.core.timezones import zone_info

GOLDEN = Path(__file__).parent / "java_time_golden" / "golden.tsv"
LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"


def _cases() -> list[tuple[str, str, int, str]]:
    rows = []
    for line in GOLDEN.read_text("utf-8").splitlines():
        pattern, zone, millis, text = line.split("\t")
        rows.append((pattern, zone, int(millis), text))
    return rows


def test_lenses_date_patterns_print_as_the_jvm_prints_them():
    cases = _cases()
    assert len(cases) > 1000
    wrong = []
    for pattern, zone, millis, expected in cases:
        moment = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)).astimezone(zone_info(zone))
        got = lenses_date_printer(pattern)(moment)
        if got != expected:
            wrong.append((pattern, zone, millis, expected, got))
    assert wrong == []


def test_uuuu_ll_dd_print_2010_04_02_as_in_lenses_own_test():
    """LS ``S3SinkTaskTest`` "partition by date": ``_date.uuuu,_date.LL,_date.dd`` → ``2010/04/02``."""
    moment = datetime(2010, 4, 2, 6, 0, tzinfo=UTC)
    assert [lenses_date_printer(p)(moment) for p in ("uuuu", "LL", "dd")] == ["2010", "04", "02"]


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        ("YYYY", "'Y'"),
        ("ww", "'w'"),
        ("XXX", "'X'"),
        ("VV", "'V'"),
        ("z", "'z'"),
        ("e", "'e'"),
        ("nnn", "'n'"),
        ("ddd", "ddd"),
        ("aa", "aa"),
        ("QQQQ", "QQQQ"),
        ("yyyy'T", "quoted literal"),
        ("yyyy]", "']'"),
        ("yyyy#", "'#'"),
        ("b", "'b'"),
        ("yyyy.MM", "'.'"),
    ],
)
def test_a_pattern_letter_lenses_prints_otherwise_is_an_error_naming_kcql_and_the_letter(pattern, named):
    with pytest.raises(ConfigError) as caught:
        lenses_date_printer(pattern)
    assert caught.value.key == KCQL_KEY
    assert named in str(caught.value) and f"_date.{pattern}" in str(caught.value)


def test_a_refused_date_pattern_fails_the_configuration():
    raw = {
        "name": "lenses-sink",
        "connector.class": LENSES_SINK,
        KCQL_KEY: "INSERT INTO b:p SELECT * FROM t PARTITIONBY _date.ww STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true)",
    }
    with pytest.raises(ConfigError) as caught:
        SINK.parse(raw)
    assert caught.value.key == KCQL_KEY and "'w'" in str(caught.value)
    raw[KCQL_KEY] = raw[KCQL_KEY].replace("_date.ww", "_date.EEE")
    assert SINK.parse(raw)["partition.field.name"] == ["_date.EEE"]
