"""Issue 18, exact mode: envelope objects decode column-wise, record for record what the per-record decoders gave.

The reference for each format is the decoding before the lever: fastavro's dicts (Avro) and orjson's (JSON) turned
into Arrow by ``envelope_batch``.
"""

import io

import fastavro
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats import avro as avro_module
from kafka_s3.core.formats import json as json_module
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.avro_container import MAGIC
from kafka_s3.core.formats.avro_encoding import varint
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.formats.envelope import KAFKA_RECORD_AVRO, envelope_batch
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.records import RECORD_SCHEMA, make_batch
from tests.support.formats import CTX, read_object, sink_config, write_object

SYNC = bytes(range(16))
header_values = st.one_of(st.none(), st.binary(max_size=8))
records_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.one_of(st.none(), st.binary(max_size=20)),
            "value": st.one_of(st.none(), st.binary(max_size=300)),
            "topic": st.sampled_from(["orders", "t", "é-topic"]),
            "partition": st.integers(0, 2**31 - 1),
            "offset": st.integers(0, 2**63 - 1),
            # no timestamp, or one fastavro can give as a datetime (years 1 to 9999)
            "timestamp": st.one_of(st.none(), st.integers(-62_135_596_800_000, 253_402_300_799_999)),
            "timestampType": st.sampled_from([-1, 0, 1]),
            "headers": st.lists(st.tuples(st.sampled_from(["h", "trace", "", "ü"]), header_values), max_size=4),
        }
    ),
    min_size=1,
    max_size=40,
)


def avro_envelope(**options):
    return AvroFormat(sink_config("avro", store__envelope="true", **options), envelope=True)


def fastavro_reference(data: bytes) -> pa.Table:
    """What the Avro envelope reader gave before the lever: fastavro's dicts, then ``envelope_batch``."""
    rows = list(fastavro.reader(io.BytesIO(data)))
    return pa.Table.from_batches([envelope_batch(rows)]) if rows else RECORD_SCHEMA.empty_table()


def read_table(fmt, data: bytes) -> pa.Table:
    batches = read_object(fmt, data)
    assert all(batch.schema == RECORD_SCHEMA for batch in batches)
    return pa.Table.from_batches(batches, schema=RECORD_SCHEMA)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=records_strategy, codec=st.sampled_from(["null", "deflate", "snappy"]), cut=st.integers(1, 40))
def test_avro_envelope_column_decoder_matches_fastavro(rows, codec, cut):
    fmt = avro_envelope(avro__codec=codec)
    records = make_batch(rows)
    data = write_object(fmt, [(records.slice(0, cut), None), (records.slice(cut), None)])
    assert read_table(fmt, data).equals(fastavro_reference(data))


def test_avro_envelope_blocks_decode_without_per_record_dicts(monkeypatch):
    """A valid envelope object never goes through fastavro's records and ``envelope_batch`` (the per-record path)."""
    fmt = avro_envelope(avro__codec="deflate")
    records = make_batch([{"offset": i, "key": b"k", "value": b"v" * i, "headers": [("h", b"1")]} for i in range(500)])
    data = write_object(fmt, [(records, None)])
    expected = fastavro_reference(data)

    def per_record(rows):
        raise AssertionError(f"{len(rows)} records decoded one by one")

    monkeypatch.setattr(avro_module, "envelope_batch", per_record)
    assert read_table(fmt, data).equals(expected)


def _container(blocks: list[tuple[int, bytes]]) -> bytes:
    """An uncompressed envelope container of hand-encoded blocks ``(record count, data)``."""
    metadata = {b"avro.schema": orjson.dumps(KAFKA_RECORD_AVRO), b"avro.codec": b"null"}
    out = [MAGIC, varint(len(metadata))]
    for key, value in metadata.items():
        out += [varint(len(key)), key, varint(len(value)), value]
    out += [varint(0), SYNC]
    for count, data in blocks:
        out += [varint(count), varint(len(data)), data, SYNC]
    return b"".join(out)


def _string(text: bytes) -> bytes:
    return varint(len(text)) + text


def _record(offset: int, headers: bytes, timestamp: bytes = b"\x02" + varint(1_700_000_000_000)) -> bytes:
    """A KafkaRecord of topic ``t``, partition 0, key null, value ``v``, with ``headers`` already encoded."""
    return (
        _string(b"t") + varint(0) + varint(offset) + timestamp + varint(0) + b"\x00" + b"\x02" + _string(b"v") + headers
    )


HEADER_H1 = _string(b"h") + b"\x02" + _string(b"1")
HEADER_NULL = _string(b"x") + b"\x00"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(varint(2) + HEADER_H1 + HEADER_NULL + varint(0), id="one-block"),
        pytest.param(varint(1) + HEADER_H1 + varint(1) + HEADER_NULL + varint(0), id="two-blocks"),
        # a negative count: the block's byte size follows (Java's BlockingBinaryEncoder writes these)
        pytest.param(
            varint(-2) + varint(len(HEADER_H1 + HEADER_NULL)) + HEADER_H1 + HEADER_NULL + varint(0), id="sized"
        ),
        pytest.param(varint(0), id="none"),
    ],
)
def test_avro_envelope_header_arrays_in_any_blocking_decode_as_fastavro_decodes_them(headers):
    data = _container([(2, _record(7, headers) + _record(8, headers))])
    table = read_table(avro_envelope(), data)
    assert table.equals(fastavro_reference(data))
    assert table.column("offset").to_pylist() == [7, 8]


def test_avro_envelope_encodings_the_column_decoder_refuses_go_to_fastavro():
    """An over-long varint (valid Avro, e.g. a union index 0 as ``80 00``) is left to fastavro, block by block,
    keeping the records' order around it."""
    overlong_null_timestamp = b"\x80\x00"
    blocks = [
        (1, _record(1, varint(0))),
        (1, _record(2, varint(0), timestamp=overlong_null_timestamp)),
        (1, _record(3, varint(0))),
    ]
    data = _container(blocks)
    table = read_table(avro_envelope(), data)
    assert table.equals(fastavro_reference(data))
    assert table.column("offset").to_pylist() == [1, 2, 3]
    assert table.column("timestamp").to_pylist()[1] is None


def test_avro_envelope_timestamp_fastavro_refuses_is_refused():
    """A timestamp beyond datetime's year 9999 was a corrupt record to fastavro; the column decoder leaves it to
    fastavro, so the error (and under behavior.on.error=ignore the skip) is the same as before."""
    far = b"\x02" + varint(253_402_300_800_000)
    data = _container([(1, _record(1, varint(0))), (1, _record(2, varint(0), timestamp=far))])
    with pytest.raises(FormatError, match="corrupt Avro record") as caught:
        read_object(avro_envelope(), data)
    assert caught.value.object_key == CTX.object_key


def test_avro_envelope_bytes_left_in_a_block_are_what_fastavro_makes_of_them():
    data = _container([(1, _record(1, varint(0)) + b"\x00\x00"), (1, _record(2, varint(0)))])
    assert read_table(avro_envelope(), data).equals(fastavro_reference(data))


# ----------------------------------------------------------------------------------------------------- JSON envelope
def json_envelope(**options):
    return JsonFormat(sink_config("json", store__envelope="true", **options), envelope=True)


def per_line_reference(data: bytes) -> pa.Table:
    """What the JSON envelope reader gave before the lever: each line's dict rebuilt, then ``envelope_batch``."""
    rows = [json_module._envelope_row(orjson.loads(line)) for line in data.splitlines() if line]
    return pa.Table.from_batches([envelope_batch(rows)]) if rows else RECORD_SCHEMA.empty_table()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=records_strategy, cut=st.integers(1, 40))
def test_json_envelope_columns_match_the_per_line_decoder(rows, cut):
    fmt = json_envelope()
    records = make_batch(rows)
    data = write_object(fmt, [(records.slice(0, cut), None), (records.slice(cut), None)])
    assert read_table(fmt, data).equals(per_line_reference(data))


def test_json_envelope_lines_decode_without_per_record_dicts(monkeypatch):
    fmt = json_envelope(s3__compression__type="gzip")
    records = make_batch([{"offset": i, "key": b"k", "value": b"v" * i, "headers": [("h", b"1")]} for i in range(500)])
    data = write_object(fmt, [(records, None)])
    expected = read_table(fmt, data)

    def per_record(rows):
        raise AssertionError(f"{len(rows)} records decoded one by one")

    monkeypatch.setattr(json_module, "envelope_batch", per_record)
    assert read_table(fmt, data).equals(expected)


def test_json_envelope_bad_lines_are_skipped_alone():
    """Lines the column path cannot take (bad base64, a header without a value, a missing offset, not an object)
    go line by line: each is skipped alone, at its line, between the good ones."""
    good = write_object(json_envelope(), [(make_batch([{"offset": i, "key": b"k"} for i in range(4)]), None)])
    lines = good.splitlines()
    bad = [
        lines[0].replace(b'"key":"aw=="', b'"key":"a!=="'),
        lines[1],
        b'{"topic":"t","partition":0,"offset":5,"timestampType":0,"headers":[{"key":"h"}]}',
        lines[2],
        b'{"topic":"t","partition":0,"timestampType":0}',
        b"[1,2]",
        lines[3],
    ]
    found = []
    ctx = FileContext(CTX.topic, CTX.partition, CTX.start_offset, CTX.object_key, found)
    batches = list(json_envelope().read(io.BytesIO(b"\n".join(bad) + b"\n"), ctx))
    assert pa.Table.from_batches(batches).column("offset").to_pylist() == [1, 2, 3]
    assert [s.position for s in found] == ["line 1", "line 3", "line 5", "line 6"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=records_strategy)
def test_json_envelope_lines_render_column_wise_byte_for_byte(rows):
    records = make_batch(rows)
    assert bytes(json_module._envelope_lines(records)) == bytes(json_module._envelope_lines_per_record(records))


def test_json_envelope_lines_render_without_orjson_per_record(monkeypatch):
    records = make_batch([{"offset": i, "key": b"k", "value": b"v" * i, "headers": [("h", b"1")]} for i in range(50)])
    expected = write_object(json_envelope(), [(records, None)])

    class NoDumps:
        loads = staticmethod(orjson.loads)

        @staticmethod
        def dumps(*args, **kwargs):
            raise AssertionError("a record rendered by orjson.dumps")

    monkeypatch.setattr(json_module, "orjson", NoDumps)
    assert write_object(json_envelope(), [(records, None)]) == expected


def test_json_envelope_lines_with_a_null_header_render_per_record():
    """A null header inside a headers list (never read from Kafka) is left to the per-record path (``null``)."""
    header = pa.array([{"key": "h", "value": b"1"}, None], RECORD_SCHEMA.field("headers").type.value_type)
    records = make_batch([{"offset": 1}])
    headers = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), header, type=RECORD_SCHEMA.field("headers").type)
    records = records.set_column(RECORD_SCHEMA.get_field_index("headers"), "headers", headers)
    assert bytes(json_module._envelope_lines(records)).endswith(b'"headers":[{"key":"h","value":"MQ=="},null]}\n')
