import orjson
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core import json_text

ITEMS = st.lists(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=5)), max_size=3 * json_text.SLICE + 7
)


@given(ITEMS)
def test_lines_match_rendering_everything_at_once(items):
    expected = b"".join(orjson.dumps(i) + b"\n" for i in items)
    assert bytes(json_text.lines(items, orjson.dumps)) == expected


@given(ITEMS)
def test_binary_arrays_keep_order_and_nulls(items):
    array = json_text.binary_array(items, orjson.dumps)
    assert array.type == pa.binary()
    assert array.to_pylist() == [None if i is None else orjson.dumps(i) for i in items]
