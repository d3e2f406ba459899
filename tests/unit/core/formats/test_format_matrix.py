"""Every format x role x compression/codec: round trips, determinism, extensions, write-only sinks."""

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.formats import REGISTRY
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.bytearray import ByteArrayFormat
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.formats.parquet import ParquetFormat
from kafka_s3.core.records import RECORD_SCHEMA, make_batch, to_dicts
from tests.support.formats import CTX, read_object, sample_records, sink_config, write_object

VARIANTS = (
    [(JsonFormat, {"s3__compression__type": c}) for c in ("none", "gzip", "zstd")]
    + [(ByteArrayFormat, {"s3__compression__type": c}) for c in ("none", "gzip", "zstd")]
    + [(AvroFormat, {"avro__codec": c}) for c in ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")]
    + [(ParquetFormat, {"parquet__codec": c}) for c in ("none", "snappy", "gzip", "zstd", "lz4")]
)
ROLES = ("value", "keys", "headers", "envelope")
CASES = [
    pytest.param(cls, options, role, id=f"{cls.name}-{'-'.join(options.values())}-{role}")
    for cls, options in VARIANTS
    for role in ROLES
    if not (cls is ByteArrayFormat and role in ("headers", "envelope"))
]


def make_format(cls, options, role):
    config = sink_config(cls.name, behavior__on__null__values="write", **options)
    if role == "envelope":
        return cls(config, envelope=True)
    return cls(config, role=role, converter=ByteArrayConverter({}, is_key=role == "keys"))


def chunks_for(fmt, records, sizes):
    """``(records, values)`` write calls over ``records`` split into chunks of ``sizes``."""
    column = {"value": "value", "keys": "key"}.get(fmt.role)
    chunks, start = [], 0
    for size in sizes:
        part = records.slice(start, size)
        values = None
        if column and not fmt.envelope:
            ((_, values),) = fmt.converter.to_logical(part.column("topic")[0].as_py(), part.column(column)).runs
        chunks.append((part, values))
        start += size
    return chunks


def expected_rows(fmt, records):
    if fmt.envelope:
        return to_dicts(records)
    column = {"value": "value", "keys": "key", "headers": "headers"}[fmt.role]
    values = [row[column] for row in to_dicts(records)]
    if isinstance(fmt, ByteArrayFormat):
        values = [b"" if v is None else v for v in values]  # raw bytes cannot say "null"
    return values


def read_rows(fmt, data):
    batches = read_object(fmt, data)
    assert all(batch.schema == RECORD_SCHEMA for batch in batches)
    if fmt.envelope:
        return to_dicts(batches)
    column = {"value": "value", "keys": "key", "headers": "headers"}[fmt.role]
    rows = to_dicts(batches)
    others = {name for name in RECORD_SCHEMA.names if name != column}
    assert all(row[name] in (None, []) for row in rows for name in others)  # only the role's column is filled
    return [row[column] for row in rows]


@pytest.mark.parametrize("cls, options, role", CASES)
def test_round_trip(cls, options, role):
    fmt = make_format(cls, options, role)
    records = sample_records(6)
    data = write_object(fmt, chunks_for(fmt, records, [2, 4]))
    assert read_rows(fmt, data) == expected_rows(fmt, records)


@pytest.mark.parametrize("cls, options, role", CASES)
def test_same_records_give_identical_bytes_however_batched(cls, options, role):
    fmt = make_format(cls, options, role)
    records = sample_records(200)
    whole = write_object(fmt, chunks_for(fmt, records, [200]))
    assert write_object(fmt, chunks_for(fmt, records, [200])) == whole
    assert write_object(fmt, chunks_for(fmt, records, [1, 77, 3, 119])) == whole


@pytest.mark.parametrize(
    "cls, options, extension",
    [
        (JsonFormat, {}, ".json"),
        (JsonFormat, {"s3__compression__type": "gzip"}, ".json.gz"),
        (JsonFormat, {"s3__compression__type": "zstd"}, ".json.zst"),
        (ByteArrayFormat, {}, ".bin"),
        (ByteArrayFormat, {"s3__compression__type": "gzip"}, ".bin.gz"),
        (ByteArrayFormat, {"format__bytearray__extension": ".raw", "s3__compression__type": "zstd"}, ".raw.zst"),
        (AvroFormat, {"avro__codec": "snappy"}, ".avro"),
        (AvroFormat, {"avro__codec": "xz"}, ".avro"),
        (ParquetFormat, {}, ".snappy.parquet"),
        (ParquetFormat, {"parquet__codec": "none"}, ".parquet"),
        (ParquetFormat, {"parquet__codec": "gzip"}, ".gz.parquet"),
        (ParquetFormat, {"parquet__codec": "zstd"}, ".zstd.parquet"),
        (ParquetFormat, {"parquet__codec": "lz4"}, ".lz4.parquet"),
    ],
)
def test_extensions_match_confluent(cls, options, extension):
    assert cls(sink_config(cls.name, **options)).extension == extension


@pytest.mark.parametrize(
    "name, cls",
    [
        ("io.confluent.connect.s3.format.json.JsonFormat", JsonFormat),
        ("io.confluent.connect.s3.format.bytearray.ByteArrayFormat", ByteArrayFormat),
        ("io.confluent.connect.s3.format.avro.AvroFormat", AvroFormat),
        ("io.confluent.connect.s3.format.parquet.ParquetFormat", ParquetFormat),
    ],
)
def test_registry_resolves_confluent_class_names(name, cls):
    assert REGISTRY.resolve(name) is cls


@pytest.mark.parametrize("cls", [JsonFormat, AvroFormat, ParquetFormat, ByteArrayFormat])
def test_an_object_without_records_is_valid(cls):
    fmt = cls(sink_config(cls.name), converter=ByteArrayConverter({}, is_key=False))
    assert read_rows(fmt, write_object(fmt, [])) == []


@pytest.mark.parametrize("cls", [JsonFormat, AvroFormat, ParquetFormat, ByteArrayFormat])
def test_a_restore_configuration_reads_what_a_backup_wrote(cls):
    backup = cls(sink_config(cls.name), converter=ByteArrayConverter({}, is_key=False))
    records = sample_records(4).slice(1)  # no null value: ByteArrayFormat cannot tell null from empty
    data = write_object(backup, chunks_for(backup, records, [3]))
    restore_config = SOURCE.parse({"name": "r", "s3.bucket.name": "b", "format.class": cls.name, "topics": "orders"})
    restore = cls(restore_config, converter=ByteArrayConverter({}, is_key=False))
    assert read_rows(restore, data) == records.column("value").to_pylist()


# ------------------------------------------------------------------------------------- exact envelope round trip
TOPIC_NAMES = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=20)
HEADERS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "é", ""]) | st.text(max_size=4), st.none() | st.binary(max_size=6)), max_size=5
)


@st.composite
def kafka_records(draw):
    count = draw(st.integers(1, 25))
    first_offset = draw(st.integers(0, 2**62))
    rows = []
    for i in range(count):
        timestamp = draw(st.none() | st.integers(-(2**41), 2**45))
        rows.append(
            {
                "topic": draw(TOPIC_NAMES),
                "partition": draw(st.integers(0, 2**31 - 1)),
                "offset": first_offset + i,
                "key": draw(st.none() | st.binary(max_size=12)),
                "value": draw(st.none() | st.binary(max_size=40)),
                "timestamp": timestamp,
                "timestampType": -1 if timestamp is None else draw(st.sampled_from([0, 1])),
                "headers": draw(HEADERS),
            }
        )
    return make_batch(rows), draw(st.integers(0, count))


ENVELOPE_FORMATS = [
    (JsonFormat, {"s3__compression__type": "gzip"}),
    (AvroFormat, {"avro__codec": "deflate"}),
    (ParquetFormat, {"parquet__codec": "zstd"}),
]


@pytest.mark.parametrize("cls, options", ENVELOPE_FORMATS, ids=[c.name for c, _ in ENVELOPE_FORMATS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=kafka_records())
def test_envelope_restores_every_record_exactly(cls, options, case):
    records, split_at = case
    fmt = cls(sink_config(cls.name, **options), envelope=True)
    data = write_object(fmt, [(records.slice(0, split_at), None), (records.slice(split_at), None)])
    assert to_dicts(read_object(fmt, data)) == to_dicts(records)


def test_envelope_columns_survive_as_spark_kafka_types():
    fmt = ParquetFormat(sink_config("parquet"), envelope=True)
    (batch,) = read_object(fmt, write_object(fmt, [(sample_records(3), None)]))
    assert batch.schema == RECORD_SCHEMA
    assert batch.column("timestamp").type == pa.timestamp("us", tz="UTC")


def test_ctx_is_used_for_avro_sync_marker():
    fmt = AvroFormat(sink_config("avro"), envelope=True)
    data = write_object(fmt, [(sample_records(3), None)])
    assert data.endswith(CTX.sync_marker())
