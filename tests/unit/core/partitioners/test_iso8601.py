"""ISO-8601 parsing as Joda's ISODateTimeFormat.dateTimeParser() accepts it (the RecordField extractor's strings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.partitioners.iso8601 import parse_millis

HOUR = 3_600_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_ms(*fields: int) -> int:
    return (datetime(*fields, tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2015-04-02T08:00:00.000Z", utc_ms(2015, 4, 2, 8)),
        ("2015-04-02T01:00:00.000-07:00", utc_ms(2015, 4, 2, 8)),
        ("2015-04-02T13:30+0530", utc_ms(2015, 4, 2, 8)),
        ("2015-04-02T10+02", utc_ms(2015, 4, 2, 8)),
        ("2015-04-02t08:00:00z", utc_ms(2015, 4, 2, 8)),
        ("2015-04-02T08:00:00,5", utc_ms(2015, 4, 2, 8) + 500),
        ("2015-04-02T08:00:00.123456789", utc_ms(2015, 4, 2, 8) + 123),
        ("2015-04-02T08.5", utc_ms(2015, 4, 2, 8, 30)),
        ("2015-04-02T08:15.5", utc_ms(2015, 4, 2, 8, 15, 30)),
        ("2015-04-02T", utc_ms(2015, 4, 2)),
        ("2015-04-02", utc_ms(2015, 4, 2)),
        ("2015-04", utc_ms(2015, 4, 1)),
        ("2015", utc_ms(2015, 1, 1)),
        ("+2015-04-02", utc_ms(2015, 4, 2)),
        ("2015-092", utc_ms(2015, 4, 2)),
        ("2015-W14-4", utc_ms(2015, 4, 2)),
        ("2015-w14", utc_ms(2015, 3, 30)),
        ("2015-04-02T08:00+01:00:30.250", utc_ms(2015, 4, 2, 6, 59, 29, 750_000)),
        ("T08:00Z", 8 * HOUR),
        ("T08", 8 * HOUR),
    ],
)
def test_accepts_what_joda_accepts(text, expected):
    assert parse_millis(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "T",
        "TZ",
        "2015-04-02 08:00",
        "2015-04-02Z",
        "2015-4-2",
        "2015-13-01",
        "2015-02-29",
        "2015-366",
        "2015-W54",
        "2015-04-02T24:00",
        "2015-04-02T08:60",
        "2015-04-02T0800",
        "2015-04-02T08:00+08:0000",
        "2015-04-02T08:00+8",
        "2015-04-02T08:00:00.1234567890",
        "0000-01-01",
        "yesterday",
    ],
)
def test_rejects_what_joda_rejects(text):
    with pytest.raises(ValueError):
        parse_millis(text)


@settings(deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)), st.integers(-18 * 60, 18 * 60))
def test_round_trips_python_isoformat(moment, offset_minutes):
    zone = timezone(timedelta(minutes=offset_minutes))
    aware = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=zone)

    assert parse_millis(aware.isoformat(timespec="milliseconds")) == (aware - EPOCH) // timedelta(milliseconds=1)
