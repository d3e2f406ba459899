"""kcat's ``-o`` forms as ``kafka-s3 read`` takes them (:func:`kafka_s3.pipelines.read.options.parse_start`)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.options import Start, parse_start

pytestmark = pytest.mark.issue(28, item=3)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("beginning", Start("beginning")),
        ("earliest", Start("beginning")),
        ("end", Start("end")),
        ("latest", Start("end")),
        ("1200", Start("offset", 1200)),
        ("-10", Start("from_end", 10)),
        ("s@1700000050000", Start("time", 1_700_000_050_000)),
        ("s@2023-11-14T22:14:10Z", Start("time", 1_700_000_050_000)),
        ("s@2023-11-14T22:14:10", Start("time", 1_700_000_050_000)),  # no zone: UTC
        (7, Start("offset", 7)),
        (-3, Start("from_end", 3)),
    ],
)
def test_parse_start_reads_each_of_kcats_offset_forms(text, start):
    assert parse_start(text) == start


def test_parse_start_keeps_partition_and_offset_pairs_and_they_choose_the_partitions():
    start = parse_start("0:5,2:7,orders:1:9")
    assert start.kind == "positions"
    assert start.partitions("orders") == [0, 1, 2] and start.partitions("events") == [0, 2]
    assert start.offset_of(("events", 2)) == 7 and start.offset_of(("orders", 1)) == 9
    assert start.offset_of(("events", 1)) is None


@pytest.mark.parametrize("text", ["", "begin", "e@1700000000000", "s@yesterday", "--5", "0:x"])
def test_parse_start_names_the_forms_it_takes_when_given_another(text):
    with pytest.raises(ConfigError) as raised:
        parse_start(text, "--offset")
    assert str(raised.value).startswith("--offset: "), raised.value
    assert any(form in str(raised.value) for form in ("beginning, end", "PARTITION:OFFSET", "ISO-8601")), raised.value
