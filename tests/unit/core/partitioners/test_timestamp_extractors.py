"""Timestamp extractors (Wallclock, Record, RecordField): each row's time as epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from kafka_s3.core.errors import ConfigError, PartitionerError
from kafka_s3.core.partitioners import EXTRACTORS
from kafka_s3.core.partitioners.timestamps import (
    RecordFieldTimestampExtractor,
    RecordTimestampExtractor,
    WallclockTimestampExtractor,
)
from tests.support.partitioners import (
    batch,
    bytes_values,
    epoch_ms,
    json_values,
    sink_config,
    struct_values,
)

APRIL_2 = epoch_ms("2015-04-02T01:00:00-07:00")


def extractor(name: str, **props: str):
    config = sink_config(**{"timestamp.extractor": name, **props})
    return EXTRACTORS.resolve(config["timestamp.extractor"])(config)


@pytest.mark.parametrize(
    "name, cls",
    [
        ("Wallclock", WallclockTimestampExtractor),
        ("Record", RecordTimestampExtractor),
        ("RecordField", RecordFieldTimestampExtractor),
        (
            "io.confluent.connect.storage.partitioner.TimeBasedPartitioner$RecordTimestampExtractor",
            RecordTimestampExtractor,
        ),
    ],
)
def test_extractors_resolve_by_short_and_confluent_names(name, cls):
    assert type(extractor(name)) is cls


def test_wallclock_gives_now_to_every_row_and_is_not_deterministic():
    wallclock = extractor("Wallclock")

    times = wallclock.extract(batch(3, timestamps=[1, 2, 3]), bytes_values(3), now_ms=1_700_000_000_123)

    assert times.dtype == np.int64 and times.tolist() == [1_700_000_000_123] * 3
    assert not wallclock.deterministic


def test_record_gives_the_kafka_timestamp_in_ms():
    record = extractor("Record")

    times = record.extract(batch(2, timestamps=[APRIL_2, 0]), bytes_values(2), now_ms=5)

    assert times.dtype == np.int64 and times.tolist() == [APRIL_2, 0]
    assert record.deterministic


@pytest.mark.parametrize("missing", [None, -1])
def test_record_without_timestamp_names_its_offset(missing):
    records = batch(3, timestamps=[APRIL_2, missing, APRIL_2], topic="orders", partition=2, first_offset=50)

    with pytest.raises(PartitionerError, match="no timestamp.*topic=orders partition=2 offset=51"):
        extractor("Record").extract(records, bytes_values(3), now_ms=0)


EVENT = pa.struct(
    [
        pa.field("id", pa.int32()),
        pa.field("ms", pa.int64()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("seconds", pa.timestamp("s")),
        pa.field("text", pa.string()),
        pa.field("meta", pa.struct([pa.field("created", pa.int64())])),
        pa.field("ratio", pa.float64()),
    ]
)
APRIL_2_UTC = datetime(2015, 4, 2, 8, tzinfo=UTC)
EVENTS = [
    {
        "id": 1,
        "ms": APRIL_2,
        "at": APRIL_2_UTC.replace(microsecond=123_999),
        "seconds": APRIL_2_UTC.replace(tzinfo=None),
        "text": "2015-04-02T01:00:00.000-07:00",
        "meta": {"created": APRIL_2 + 1},
        "ratio": 0.5,
    },
    {
        "id": 2,
        "ms": 0,
        "at": datetime(1970, 1, 1, tzinfo=UTC),
        "seconds": datetime(1970, 1, 1),
        "text": "1970-01-01",
        "meta": {"created": 1},
        "ratio": 1.5,
    },
]


@pytest.mark.parametrize(
    "field, expected",
    [
        ("ms", [APRIL_2, 0]),
        ("at", [APRIL_2 + 123, 0]),
        ("seconds", [APRIL_2, 0]),
        ("text", [APRIL_2, 0]),
        ("meta.created", [APRIL_2 + 1, 1]),
    ],
)
def test_record_field_reads_struct_fields(field, expected):
    times = extractor("RecordField", **{"timestamp.field": field}).extract(batch(2), struct_values(EVENTS, EVENT), 0)

    assert times.dtype == np.int64 and times.tolist() == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (APRIL_2, APRIL_2),
        (1234.9, 1234),
        (-1.5, -1),
        ("2015-04-02T08:00:00Z", APRIL_2),
        ("2015-04-02T01:00-07:00", APRIL_2),
        ("2015-04-02", APRIL_2 - 8 * 3_600_000),
    ],
)
def test_record_field_reads_json_numbers_and_iso_strings(value, expected):
    values = json_values([{"event": {"time": value}}])

    times = extractor("RecordField", **{"timestamp.field": "event.time"}).extract(batch(1), values, now_ms=0)

    assert times.tolist() == [expected]


def test_record_field_parses_repeated_strings_once_per_value_and_keeps_row_order():
    texts = ["2015-04-02T08:00:00Z", "1970-01-01T00:00:01Z", "2015-04-02T08:00:00Z"]
    arrow_type = pa.struct([pa.field("t", pa.string())])

    times = extractor("RecordField", **{"timestamp.field": "t"}).extract(
        batch(3), struct_values([{"t": text} for text in texts], arrow_type), now_ms=0
    )

    assert times.tolist() == [APRIL_2, 1000, APRIL_2]


@pytest.mark.parametrize(
    "values, problem",
    [
        (json_values([{"time": 1}, {"other": 1}]), "'time' is missing or null"),
        (json_values([{"time": 1}, {"time": None}]), "'time' is missing or null"),
        (json_values([{"time": 1}, {"time": True}]), "'time' has type bool"),
        (json_values([{"time": 1}, {"time": "yesterday"}]), "'time' = 'yesterday' is not an ISO-8601 date-time"),
        (json_values([{"time": 1}, {"time": "2015-04-02 10:00"}]), "is not an ISO-8601 date-time"),
        (json_values([{"time": 1}, None]), "not a JSON object"),
        (json_values([{"time": 1}, {"time": 1e30}]), "'time' = 1e+30 is out of range"),
    ],
)
def test_record_field_problems_name_the_record(values, problem):
    with pytest.raises(PartitionerError) as error:
        extractor("RecordField", **{"timestamp.field": "time"}).extract(
            batch(2, topic="clicks", partition=3, first_offset=20), values, now_ms=0
        )

    assert problem in str(error.value) and "topic=clicks partition=3 offset=21" in str(error.value)


@pytest.mark.parametrize(
    "field, problem, offset",
    [
        ("nope", "'nope' does not exist in the value schema", 0),
        ("ratio", "'ratio' has type double", 0),
        ("text", "'text' = 'soon' is not an ISO-8601 date-time", 1),
    ],
)
def test_record_field_struct_problems_name_the_record(field, problem, offset):
    rows = [EVENTS[0], {**EVENTS[1], "text": "soon"}]

    with pytest.raises(PartitionerError) as error:
        extractor("RecordField", **{"timestamp.field": field}).extract(batch(2), struct_values(rows, EVENT), 0)

    assert problem in str(error.value) and f"offset={offset})" in str(error.value)


def test_record_field_null_struct_field_names_the_record():
    rows = [EVENTS[0], {**EVENTS[1], "ms": None}]

    with pytest.raises(PartitionerError, match="'ms' is missing or null.*offset=1"):
        extractor("RecordField", **{"timestamp.field": "ms"}).extract(batch(2), struct_values(rows, EVENT), 0)


def test_record_field_refuses_raw_bytes():
    with pytest.raises(PartitionerError, match="timestamp.field reads fields of record values, but the values are"):
        extractor("RecordField").extract(batch(1), bytes_values(1), now_ms=0)


def test_record_field_needs_a_field_name():
    with pytest.raises(ConfigError) as error:
        extractor("RecordField", **{"timestamp.field": ""})

    assert error.value.key == "timestamp.field"
