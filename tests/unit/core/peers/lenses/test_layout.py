"""Issue 15 item 7: Lenses' object names and JSON objects as Lenses writes them (LS = lensesio/stream-reactor
``kafka-connect-cloud-common/``; facts sheet B1, B2, B4, B5)."""

from __future__ import annotations

import base64
import io
import json

import pytest

from kafka_s3.core.errors import ConfigError, FormatError, LayoutError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.layout import assign_starts
from kafka_s3.core.peers.lenses.config import split_statements
from kafka_s3.core.peers.lenses.json import LensesJsonFormat
from kafka_s3.core.peers.lenses.layout import LensesLayout
from kafka_s3.core.peers.lenses.policy import SOURCE_CLASS as LENSES_SOURCE_CLASS
from kafka_s3.core.records import to_dicts

DATA = {".json": "data"}


@pytest.mark.parametrize(
    "key, topic, partition, offset, directory",
    [
        # LS sink/naming/FileNamer.scala (≥7.2.0): last offset %012d, then the min and max record timestamps
        ("p/orders/0/000000000042_1577849400000_1577849460000.json", "orders", 0, 42, "orders/0"),
        ("p/orders/3/000000000007_-1_-1.json", "orders", 3, 7, "orders/3"),  # no timestamps: -1
        ("p/orders/0/000000000042.json", "orders", 0, 42, "orders/0"),  # 5.x-7.1: padded, no timestamps
        ("p/orders/0/42.json", "orders", 0, 42, "orders/0"),  # ≤4.x: unpadded
        # PARTITIONBY a,b: CloudKeyNamer with PartitionField names (a=<v>/b=<v>/<topic>(<partition>_<offset>))
        ("p/a=x/b=1/orders(2_000000000009).json", "orders", 2, 9, "a=x/b=1"),
    ],
)
def test_lenses_names_parse_into_topic_partition_last_offset_and_directory(key, topic, partition, offset, directory):
    name = LensesLayout(topics_dir="p").parse(key, DATA)  # type: ignore[arg-type]
    assert name is not None
    assert (name.topic, name.partition, name.start_offset, name.directory) == (topic, partition, offset, directory)


def test_lenses_index_objects_and_other_extensions_are_not_data():
    layout = LensesLayout(topics_dir="")
    # LS seek/IndexManagerV2: .indexes/<connector>/.locks/<topic>/<partition>.lock; ≤8.x .indexes/<c>/<t>/<p>/<o>
    assert layout.parse(".indexes/sink/.locks/orders/0.lock", DATA) is None  # type: ignore[arg-type]
    assert layout.parse(".indexes/sink/orders/00000/00000000000000000042", DATA) is None  # type: ignore[arg-type]
    assert layout.parse(".indexes/x/orders/0/000000000001.json", DATA) is None  # type: ignore[arg-type]
    assert layout.parse("orders/0/000000000001.avro", DATA) is None  # type: ignore[arg-type]


def test_a_json_object_with_another_name_is_a_layout_error():
    with pytest.raises(LayoutError, match=r"p/orders/x/000000000001\.json"):
        LensesLayout(topics_dir="p").parse("p/orders/x/000000000001.json", DATA)  # type: ignore[arg-type]


def test_objects_start_after_the_previous_last_offset():
    assert assign_starts([2, 4, 9]) == [0, 3, 5]


def _read(lines: list[bytes], envelope: bool, last: int = 1) -> list[dict]:
    fmt = LensesJsonFormat(None, "value", None, envelope)  # type: ignore[arg-type]
    ctx = FileContext("orders", 0, 0, "p/orders/0/x.json", last_offset=last)
    return to_dicts(list(fmt.read(io.BytesIO(b"".join(line + b"\n" for line in lines)), ctx)))


def test_envelope_line_as_lenses_source_converts_it():
    # The facts sheet's example line (LS S3SinkTaskJsonEnvelopeTest), and one with byte[] key and value
    lines = [
        b'{"headers":{"trace":"t1","tag":"b"},"metadata":{"partition":0,"offset":0,"topic":"orders",'
        b'"timestamp":1577849400000},"value":{"item":"apple","id":1,"sku":"A1"},"key":"k1"}',
        b'{"headers":{"n":7,"r":1.5,"ok":true,"none":null},"metadata":{"partition":0,"offset":1,"topic":"orders"},'
        b'"value":"' + base64.b64encode(b"\x00v").decode().encode() + b'","key":null,"valueIsArray":true}',
    ]
    first, second = _read(lines, envelope=True)
    assert (first["key"], first["value"], first["offset"], first["timestamp"]) == (
        b"k1",
        b'{"item":"apple","id":1,"sku":"A1"}',
        0,
        1577849400000,
    )
    assert first["headers"] == [("trace", b"t1"), ("tag", b"b")]
    assert (second["key"], second["value"], second["offset"], second["timestamp"]) == (None, b"\x00v", 1, None)
    assert second["headers"] == [("n", b"7"), ("r", b"1.5"), ("ok", b"true"), ("none", None)]


def test_envelope_errors_name_the_object_and_line():
    with pytest.raises(FormatError, match=r"p/orders/0/x\.json at line 2"):
        _read([b'{"metadata":{"offset":0}}', b"not json"], envelope=True)
    with pytest.raises(FormatError, match="only primitives"):
        _read([b'{"headers":{"h":[1]},"metadata":{"offset":0}}'], envelope=True)


def test_plain_lines_are_values_numbered_back_from_the_last_offset():
    records = _read([b'{"item":"apple"}', b'"k1"', b"42"], envelope=False, last=9)
    assert [(r["key"], r["value"], r["offset"], r["headers"]) for r in records] == [
        (None, b'{"item":"apple"}', 7, []),
        (None, b'"k1"', 8, []),
        (None, b"42", 9, []),
    ]


def test_a_lenses_source_statement_expands_into_properties_that_expand_again_to_themselves():
    (props,) = split_statements(
        {
            "connector.class": LENSES_SOURCE_CLASS,
            "connect.s3.kcql": "INSERT INTO restored SELECT * FROM bkt:a/b STOREAS `JSON` "
            "PROPERTIES('store.envelope'=true)",
            "transforms": "mine",
        }
    )
    assert props["s3.bucket.name"] == "bkt"
    assert props["topics.dir"] == "a/b"
    assert props["format.class"] == "lenses_json"
    assert props["store.envelope"] == "true"
    assert props["transforms"] == "kcqlTarget,mine"
    assert props["transforms.kcqlTarget.replacement"] == "restored"
    assert json.loads(json.dumps(props))  # plain strings only
    (again,) = split_statements(props)  # parsing expands a statement again: the same properties
    assert again == props


@pytest.mark.parametrize(
    "kcql, problem",
    [
        ("INSERT INTO t SELECT * FROM b:p STOREAS `block_gzip`", "supports STOREAS JSON"),
        ("INSERT INTO t SELECT * FROM b:p STOREAS JSON PROPERTIES('x'=1)", "PROPERTIES key 'x' is not supported"),
        ("INSERT INTO t SELECT * FROM b:p STOREAS JSON PROPERTIES('store.envelope'=yes)", "true or false"),
    ],
)
def test_a_lenses_source_statement_lenses_would_refuse_is_a_config_error_naming_why(kcql, problem):
    with pytest.raises(ConfigError, match=problem):
        split_statements({"connector.class": LENSES_SOURCE_CLASS, "connect.s3.kcql": kcql})
