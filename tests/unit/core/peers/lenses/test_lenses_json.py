"""Issue 15 item 6 (B2): a Lenses sink configuration's JSON objects, byte for byte as Lenses' sink writes them.

The golden lines (``lenses_golden/golden.jsonl``) were produced on the JVM, not by our writer:
``lenses_golden/Env.java`` follows LS (lensesio/stream-reactor)
``sink/transformers/SchemalessEnvelopeTransformer.envelope`` (a
``java.util.HashMap`` envelope, ``metadata`` and ``headers`` maps, ``keyIsArray``/``valueIsArray`` for byte[],
``convertMap`` rebuilding a schemaless JSON object as a Scala ``mutable.HashMap``) and ``sink/conversion/
ToJsonDataConverter.convertMessageValueToByteArray`` (Jackson with ``DefaultScalaModule``), on Connect's
JsonConverter's schemaless values (``java.util.HashMap``, longs). It ran against the Jackson 2.18 and Scala 2.13
jars of the Kafka distribution (``../shared/kafka/libs``)::

    java -cp jackson-core:jackson-databind:jackson-annotations:jackson-module-scala_2.13:scala-library:... \\
        Env.java < cases.tsv > golden.jsonl

The first golden line is also the facts sheet's B2 example (LS ``S3SinkTaskJsonEnvelopeTest``).
"""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError, DataError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.java_json import java_hashmap_order, scala_hashmap_order
from kafka_s3.core.peers.lenses.json import LensesJsonFormat
from kafka_s3.core.records import make_batch

GOLDEN = Path(__file__).parent / "lenses_golden"
LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
CONVERTERS = {
    "string": {"converter": "org.apache.kafka.connect.storage.StringConverter"},
    "bytes": {"converter": "org.apache.kafka.connect.converters.ByteArrayConverter"},
    "json": {"converter": "org.apache.kafka.connect.json.JsonConverter", "converter.schemas.enable": "false"},
    "null": {"converter": "org.apache.kafka.connect.storage.StringConverter"},
}
HEADER_TEXT = {"i": str, "f": str, "b": str, "s": str}


def _config(key_kind: str, value_kind: str, envelope: bool):
    raw = {
        "name": "lenses",
        "topics": "t",
        "s3.bucket.name": "b",
        "flush.size": "10",
        "connector.class": LENSES_SINK,
        "format.class": "lenses_json",
        "store.envelope": str(envelope).lower(),
    }
    for role, kind in (("key", key_kind), ("value", value_kind)):
        raw.update({f"{role}.{k}": v for k, v in CONVERTERS[kind].items()})
    return SINK.parse(raw)


def _raw(kind: str, text: str) -> bytes | None:
    if kind == "null":
        return None
    if kind == "bytes":
        return base64.b64decode(text)
    return text.encode()


def _write(config, records) -> bytes:
    fmt = LensesJsonFormat(config, "value", None, config["store.envelope"])
    sink = io.BytesIO()
    writer = fmt.writer(sink, FileContext("t", 0, records[0]["offset"], "key.json"))
    writer.write(make_batch(records), None)
    writer.close()
    return sink.getvalue()


def _case(fields: list[str]) -> tuple[bool, str, str, dict]:
    mode, key_kind, key, value_kind, value, topic, partition, offset, timestamp, headers = fields
    record = {
        "key": _raw(key_kind, key),
        "value": _raw(value_kind, value),
        "topic": topic,
        "partition": int(partition),
        "offset": int(offset),
        "timestamp": None if timestamp == "-" else int(timestamp),
        "headers": [(h.split("=", 1)[0], h.split("=", 1)[1][2:].encode()) for h in headers.split(";") if headers],
    }
    return mode == "env", key_kind, value_kind, record


CASES = [line.split("\t") for line in (GOLDEN / "cases.tsv").read_text().splitlines()]
LINES = (GOLDEN / "golden.jsonl").read_bytes().splitlines()


@pytest.mark.parametrize("index", range(len(CASES)))
def test_lenses_json_lines_are_the_jvm_golden_bytes(index):
    envelope, key_kind, value_kind, record = _case(CASES[index])
    config = _config(key_kind, value_kind, envelope)
    assert _write(config, [record]) == LINES[index] + b"\n"


def test_envelope_keys_come_in_lenses_order_headers_metadata_value_key():
    """PEER-FORMATS B2's example (LS S3SinkTaskJsonEnvelopeTest): key order headers, metadata, value, key."""
    config = _config("string", "json", True)
    record = {
        "key": b"k1",
        "value": b'{"item":"apple","id":1,"sku":"A1"}',
        "topic": "orders",
        "offset": 0,
        "timestamp": 1577849400000,
        "headers": [("trace", b"t1"), ("tag", b"b")],
    }
    assert _write(config, [record]) == (
        b'{"headers":{"trace":"t1","tag":"b"},"metadata":{"partition":0,"offset":0,"topic":"orders",'
        b'"timestamp":1577849400000},"value":{"item":"apple","id":1,"sku":"A1"},"key":"k1"}\n'
    )


def test_a_repeated_header_keeps_its_last_value():
    """HeaderToSinkDataConverter makes a Scala Map of the headers (``.toMap``): the last value of a name wins."""
    config = _config("string", "string", True)
    line = _write(config, [{"key": b"k", "value": b"v", "offset": 0, "headers": [("h", b"a"), ("h", b"b")]}])
    assert line.startswith(b'{"headers":{"h":"b"},')


def test_plain_json_refuses_tombstones_and_byte_arrays():
    """Lenses' plain JSON cannot hold them either (ToJsonDataConverter: 'Cannot currently write byte array as json';
    JsonConverter.fromConnectData gives null for a null value)."""
    with pytest.raises(DataError, match="offset 4: a null value"):
        _write(_config("string", "string", False), [{"key": b"k", "value": None, "offset": 4}])
    with pytest.raises(ConfigError) as caught:
        _config("string", "bytes", False)
    assert caught.value.key == "value.converter"


def test_json_with_schemas_is_refused_naming_the_converter():
    raw = {
        "name": "lenses",
        "topics": "t",
        "s3.bucket.name": "b",
        "flush.size": "10",
        "connector.class": LENSES_SINK,
        "format.class": "lenses_json",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }
    with pytest.raises(ConfigError) as caught:
        _write(SINK.parse(raw), [{"value": b"{}", "offset": 0}])
    assert caught.value.key == "value.converter"


def test_lenses_json_is_not_written_without_lenses_sink_class():
    config = SINK.parse(
        {"name": "n", "topics": "t", "s3.bucket.name": "b", "flush.size": "10", "format.class": "lenses_json"}
    )
    with pytest.raises(ConfigError, match="connector.class"):
        _write(config, [{"value": b"x", "offset": 0}])


# Orders checked against the JVM: 580 random key sets (1 to 29 keys, colliding ones such as Aa/BB among them) put
# into java.util.HashMap and scala.collection.mutable.HashMap (scala-library 2.13.16) gave these same orders; a few
# are pinned here.
@pytest.mark.parametrize(
    ("keys", "java", "scala"),
    [
        (
            ["key", "keyIsArray", "value", "valueIsArray", "metadata", "headers"],
            ["headers", "metadata", "keyIsArray", "value", "key", "valueIsArray"],
            None,
        ),
        (["timestamp", "topic", "partition", "offset"], ["partition", "offset", "topic", "timestamp"], None),
        (
            [*"abcdefghijklmnopq", "zz", "Aa", "BB"],
            ["zz", "Aa", "BB", *"abcdefghijklmnopq"],
            None,
        ),
        (["héllo", "wörld", "x/y", "Ω", "😀"], ["x/y", "wörld", "😀", "Ω", "héllo"], None),
    ],
)
def test_hash_orders_are_the_jvm_ones(keys, java, scala):
    assert java_hashmap_order(keys) == java
    if scala is not None:
        assert scala_hashmap_order(keys) == scala


def test_scala_and_java_orders_differ_where_their_tables_grow_apart():
    """Java doubles its table when the 13th key goes in, Scala before the 12th: with 12 keys they can differ."""
    rng = random.Random(7)
    differ = 0
    for _ in range(200):
        keys = [f"{rng.choice('abxyz')}{rng.randint(0, 999)}" for _ in range(12)]
        if len(set(keys)) == 12 and java_hashmap_order(keys) != scala_hashmap_order(keys):
            differ += 1
    assert differ
