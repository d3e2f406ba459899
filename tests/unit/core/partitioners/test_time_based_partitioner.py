"""TimeBasedPartitioner, DailyPartitioner and HourlyPartitioner: Confluent's directories, DST included."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from kafka_s3.core.errors import ConfigError, PartitionerError
from kafka_s3.core.partitioners import REGISTRY
from kafka_s3.core.partitioners.time_based import DailyPartitioner, HourlyPartitioner, TimeBasedPartitioner
from kafka_s3.core.partitioners.timestamps import RecordTimestampExtractor
from kafka_s3.core.records import RECORD_SCHEMA
from tests.support.partitioners import (
    batch,
    bytes_values,
    epoch_ms,
    json_values,
    partitioner,
    sink_config,
)

HOURLY_FORMAT = "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"
HOUR = 3_600_000


def time_based(zone: str, duration_ms: int, path_format: str = HOURLY_FORMAT, **props: str):
    return partitioner(
        **{
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "partition.duration.ms": str(duration_ms),
            "path.format": path_format,
            "locale": "en-US",
            "timezone": zone,
            "timestamp.extractor": "Record",
            **props,
        }
    )


def encode(part, *instants: str) -> list[str]:
    """Directories of records whose Kafka timestamps are the given ISO instants (with offsets)."""
    times = [epoch_ms(instant) for instant in instants]
    return part.encode(batch(len(times), timestamps=times), bytes_values(len(times)), now_ms=0).to_pylist()


@pytest.mark.parametrize(
    "zone, expected",
    [
        ("UTC", ["year=2015/month=04/day=02/hour=08", "year=2015/month=04/day=03/hour=06"]),
        ("America/Los_Angeles", ["year=2015/month=04/day=02/hour=01", "year=2015/month=04/day=02/hour=23"]),
        ("US/Pacific", ["year=2015/month=04/day=02/hour=01", "year=2015/month=04/day=02/hour=23"]),
    ],
)
def test_hourly_directories_in_the_local_time_of_the_zone(zone, expected):
    assert encode(time_based(zone, HOUR), "2015-04-02T08:30:00+00:00", "2015-04-03T06:59:59.999+00:00") == expected


def test_bi_hourly_floors_in_local_time_not_utc():
    """Confluent's example: 2015-04-02 01:00 in Los Angeles is in the 00:00 bi-hourly partition (UTC 08:00 is even)."""
    instant = "2015-04-02T01:00:00-07:00"

    assert encode(time_based("America/Los_Angeles", 2 * HOUR), instant) == ["year=2015/month=04/day=02/hour=00"]
    assert encode(time_based("UTC", 2 * HOUR), instant) == ["year=2015/month=04/day=02/hour=08"]


def test_spring_forward_gap_los_angeles():
    """02:00 PST jumps to 03:00 PDT: a bi-hourly floor of 02:00 does not exist and Joda moves it past the gap."""
    instants = ("2015-03-08T01:30:00-08:00", "2015-03-08T03:30:00-07:00", "2015-03-08T04:10:00-07:00")

    hourly = time_based("America/Los_Angeles", HOUR, "HH:mmZ")
    bi_hourly = time_based("America/Los_Angeles", 2 * HOUR, "HH:mmZ")

    assert encode(hourly, *instants) == ["01:00-0800", "03:00-0700", "04:00-0700"]
    assert encode(bi_hourly, *instants) == ["00:00-0800", "03:00-0700", "04:00-0700"]


def test_fall_back_overlap_los_angeles_keeps_the_earlier_offset():
    """01:00-02:00 happens twice; Joda (west of Greenwich) starts the partition at the first 01:00."""
    instants = ("2015-11-01T01:30:00-07:00", "2015-11-01T01:30:00-08:00", "2015-11-01T02:30:00-08:00")

    assert encode(time_based("America/Los_Angeles", HOUR, "dd HH:mmZ"), *instants) == [
        "01 01:00-0700",
        "01 01:00-0700",
        "01 02:00-0800",
    ]


def test_dst_transitions_east_of_greenwich_follow_joda():
    """In Paris Joda resolves an overlapping floor to the later offset, and a floor in the gap to after the gap."""
    paris = time_based("Europe/Paris", HOUR, "HH:mmZ")

    assert encode(paris, "2015-10-25T02:30:00+02:00", "2015-10-25T02:30:00+01:00") == ["02:00+0100", "02:00+0100"]
    assert encode(time_based("Europe/Paris", 2 * HOUR, "HH:mmZ"), "2015-03-29T03:30:00+02:00") == ["03:00+0200"]


def test_trailing_delimiter_of_path_format_is_dropped():
    hourly = time_based("UTC", HOUR, HOURLY_FORMAT + "/")
    custom = time_based("UTC", HOUR, "'y'=YYYY#'m'=MM#", **{"directory.delim": "#"})

    assert encode(hourly, "2015-04-02T08:30:00+00:00") == ["year=2015/month=04/day=02/hour=08"]
    assert encode(custom, "2015-04-02T08:30:00+00:00") == ["y=2015#m=04"]
    assert hourly.partition_fields() == ["year", "month", "day", "hour"] and custom.partition_fields() == ["y", "m"]


@pytest.mark.parametrize(
    "zone, expected_daily, expected_hourly",
    [
        ("UTC", "year=2015/month=04/day=02", "year=2015/month=04/day=02/hour=05"),
        ("America/Los_Angeles", "year=2015/month=04/day=01", "year=2015/month=04/day=01/hour=22"),
    ],
)
def test_daily_and_hourly_ignore_path_format_and_duration(zone, expected_daily, expected_hourly):
    common = {
        "locale": "en-US",
        "timezone": zone,
        "timestamp.extractor": "Record",
        "path.format": "'x'=mm",
        "partition.duration.ms": "60000",
    }
    daily = partitioner(**{"partitioner.class": "DailyPartitioner", **common})
    hourly = partitioner(**{"partitioner.class": "HourlyPartitioner", **common})

    assert type(daily) is DailyPartitioner and type(hourly) is HourlyPartitioner
    assert encode(daily, "2015-04-02T05:00:00+00:00") == [expected_daily]
    assert encode(hourly, "2015-04-02T05:00:00+00:00") == [expected_hourly]
    assert (daily.duration_ms, hourly.duration_ms) == (86_400_000, HOUR)
    assert hourly.partition_fields() == ["year", "month", "day", "hour"]


def test_daily_joins_with_the_directory_delimiter():
    daily = partitioner(
        **{
            "partitioner.class": "daily",
            "locale": "en",
            "timezone": "UTC",
            "timestamp.extractor": "Record",
            "directory.delim": "_",
        }
    )

    assert encode(daily, "2015-04-02T05:00:00+00:00") == ["year=2015_month=04_day=02"]
    assert daily.partition_fields() == ["year", "month", "day"]


def test_wallclock_uses_now_and_is_not_deterministic():
    wallclock = time_based("UTC", HOUR, **{"timestamp.extractor": "Wallclock"})
    records = batch(2, timestamps=[0, 0])
    now = epoch_ms("2020-01-01T10:15:00+00:00")

    encoded = wallclock.encode(records, bytes_values(2), now_ms=now)

    assert encoded.to_pylist() == ["year=2020/month=01/day=01/hour=10"] * 2
    assert wallclock.timestamps(records, bytes_values(2), now_ms=now).tolist() == [now, now]
    assert not wallclock.deterministic


def test_timestamps_are_the_extractors_for_rotation():
    record = time_based("America/Los_Angeles", HOUR)
    times = [epoch_ms("2015-04-02T08:30:00+00:00"), 5]

    assert isinstance(record.extractor, RecordTimestampExtractor) and record.deterministic
    assert record.timestamps(batch(2, timestamps=times), bytes_values(2), now_ms=0).tolist() == times


def test_record_field_timestamps_from_json_values():
    part = time_based("UTC", HOUR, **{"timestamp.extractor": "RecordField", "timestamp.field": "at"})
    values = json_values([{"at": "2015-04-02T01:00:00-07:00"}, {"at": 1_000}])

    assert part.encode(batch(2), values, now_ms=0).to_pylist() == [
        "year=2015/month=04/day=02/hour=08",
        "year=1970/month=01/day=01/hour=00",
    ]


def test_before_1970_the_floor_truncates_toward_zero_like_java():
    """Joda floors with Java's ``/``: 1969-12-31T23:00Z lands in the 1970-01-01 daily partition, as in Confluent."""
    part = time_based("UTC", 86_400_000, "YYYY-MM-dd", **{"timestamp.extractor": "RecordField", "timestamp.field": "t"})

    assert part.encode(batch(2), json_values([{"t": -HOUR}, {"t": -86_400_000 - HOUR}]), 0).to_pylist() == [
        "1970-01-01",
        "1969-12-31",
    ]


def test_times_beyond_year_9999_name_the_record():
    part = time_based("UTC", HOUR, **{"timestamp.extractor": "RecordField", "timestamp.field": "t"})

    with pytest.raises(PartitionerError, match="not within the years 1-9999.*offset=1"):
        part.encode(batch(2), json_values([{"t": 0}, {"t": 300_000_000_000_000}]), now_ms=0)


def test_missing_record_timestamp_names_the_record():
    with pytest.raises(PartitionerError, match="no timestamp.*offset=3"):
        time_based("UTC", HOUR).encode(batch(2, timestamps=[0, None], first_offset=2), bytes_values(2), now_ms=0)


@pytest.mark.parametrize("extractor", ["Wallclock", "Record", "RecordField"])
def test_empty_batch_encodes_to_nothing(extractor):
    part = time_based("America/Los_Angeles", HOUR, **{"timestamp.extractor": extractor})

    assert part.encode(batch(0), bytes_values(0), now_ms=0).to_pylist() == []
    assert part.timestamps(batch(0), bytes_values(0), now_ms=0).tolist() == []


def base_config(**props: str):
    return sink_config(
        **{
            "partitioner.class": "time_based",
            "partition.duration.ms": "3600000",
            "path.format": HOURLY_FORMAT,
            "locale": "en-US",
            "timezone": "UTC",
            **props,
        }
    )


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": " "}, "timezone"),
        ({"locale": ""}, "locale"),
        ({"path__format": ""}, "path.format"),
        ({"path__format": "/"}, "path.format"),
        ({"partition__duration__ms": 0}, "partition.duration.ms"),
        ({"timestamp__extractor": "NoSuchExtractor"}, "timestamp.extractor"),
    ],
)
def test_configuration_errors_name_the_key(changes, key):
    with pytest.raises(ConfigError) as error:
        TimeBasedPartitioner(base_config().replace(**changes))

    assert error.value.key == key


def test_quoting_the_letters_instead_of_the_literal_is_rejected():
    with pytest.raises(ConfigError) as error:
        TimeBasedPartitioner(base_config(**{"path.format": "year='YYYY'/month='MM'"}))

    assert error.value.key == "path.format" and "'r' at index 3" in str(error.value)


def test_text_fields_need_an_english_locale():
    with pytest.raises(ConfigError) as error:
        TimeBasedPartitioner(base_config(**{"path.format": "'month'=MMMM", "locale": "de-DE"}))

    assert error.value.key == "locale"


def test_registry_names():
    for name in ("time_based", "timebased", "TimeBasedPartitioner"):
        assert REGISTRY.resolve(name) is TimeBasedPartitioner


def test_a_million_rows_are_formatted_once_per_partition():
    """Vectorised: offsets and floors in numpy; the Python formatter runs only for distinct partitions."""
    rows = 1_000_000
    rng = np.random.default_rng(7)
    millis = epoch_ms("2015-10-31T00:00:00+00:00") + rng.integers(0, 3 * 86_400_000, rows)
    records = pa.RecordBatch.from_pydict(
        {
            "key": pa.nulls(rows, pa.binary()),
            "value": pa.nulls(rows, pa.binary()),
            "topic": pa.array(["t"] * rows),
            "partition": pa.array(np.zeros(rows, np.int32)),
            "offset": pa.array(np.arange(rows)),
            "timestamp": pa.array(millis * 1000, RECORD_SCHEMA.field("timestamp").type),
            "timestampType": pa.array(np.zeros(rows, np.int32)),
            "headers": pa.nulls(rows, RECORD_SCHEMA.field("headers").type),
        },
        schema=RECORD_SCHEMA,
    )
    part = time_based("America/Los_Angeles", HOUR)
    calls = Counter()
    formatter = part.formatter

    def counting_formatter(moment):
        calls["formatter"] += 1
        return formatter(moment)

    part.formatter = counting_formatter

    encoded = part.encode(records, bytes_values(rows), now_ms=0)

    assert len(encoded) == rows
    distinct = set(encoded.unique().to_pylist())
    assert calls["formatter"] == len(distinct) <= 3 * 24 + 1
    sample = [0, rows // 2, rows - 1]
    assert [encoded[i].as_py() for i in sample] == [
        time_based("America/Los_Angeles", HOUR).encode(records.slice(i, 1), bytes_values(1), 0)[0].as_py()
        for i in sample
    ]
