"""Issue 15 item 6 (B1/B2): a Lenses sink configuration with ``connect.s3.compression.codec=GZIP`` writes its JSON
objects as Lenses does: named ``.gz`` (LS ``sink/naming/FileExtensionNamer.fileExtension``: for JSON the codec's
extension replaces the format's) and holding one gzip stream (LS ``formats/writer/JsonFormatWriter.write``: a
commons-compress ``GzipCompressorOutputStream`` around the object, level ``connect.s3.compression.level`` or 6,
each record's line then the line separator written into it; ``complete`` closes it).

The golden objects (``lenses_golden/gz_golden.tsv``: level, base64) were produced on the JVM, not by our writer:
``lenses_golden/Gz.java`` follows commons-compress ``GzipCompressorOutputStream`` (``writeHeader``: modification time
0, extra flags 2/4/0 for levels 9/1/other, operating system 255 from ``GzipParameters``' defaults; ``write``:
``Deflater.setInput`` then ``deflate`` into a 512-byte buffer until it needs input; ``finish``, ``writeTrailer``:
CRC-32 and the input size) with ``java.util.zip.Deflater(level, nowrap=true)``::

    java Gz.java <level> gz_lines.txt

over ``lenses_golden/gz_lines.txt``, the envelope lines of the records below (their bytes are item 6's writer,
checked against the JVM in ``test_lenses_json``).
"""

from __future__ import annotations

import base64
import gzip
import io
from pathlib import Path

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.records import make_batch
from kafka_s3.pipelines.backup.plugins import BackupPlugins

GOLDEN = Path(__file__).parent / "lenses_golden"
LINES = (GOLDEN / "gz_lines.txt").read_bytes()
OBJECTS = {
    int(level): base64.b64decode(body)
    for level, body in (line.split("\t") for line in (GOLDEN / "gz_golden.tsv").read_text().splitlines())
}
LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"


def _plugins(**settings: str) -> BackupPlugins:
    return BackupPlugins.from_config(
        SINK.parse(
            {
                "name": "lenses-sink",
                "connector.class": LENSES_SINK,
                "connect.s3.kcql": "INSERT INTO b:p SELECT * FROM t STOREAS `JSON` PROPERTIES('store.envelope'=true)",
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                **settings,
            }
        )
    )


def _records():
    return make_batch(
        [{"topic": "t", "offset": o, "key": b"k%d" % o, "value": (f"v{o} " * (o % 7 + 1)).encode()} for o in range(200)]
    )


@pytest.mark.parametrize("level", [None, 9, 1])
def test_lenses_gzip_json_objects_are_the_jvm_golden_bytes(level):
    settings = {"connect.s3.compression.codec": "GZIP"}
    if level is not None:
        settings["connect.s3.compression.level"] = str(level)
    plugins = _plugins(**settings)
    assert plugins.value_format.extension == ".gz"
    assert not [w for w in plugins.config.warnings if "compression" in w]  # read, not ignored
    sink = io.BytesIO()
    writer = plugins.value_format.writer(sink, FileContext("t", 0, 0, "p/t/0/000000000199_-1_-1.gz"))
    records = _records()
    writer.write(records.slice(0, 77), None)  # batch boundaries do not change the stream
    writer.write(records.slice(77), None)
    writer.close()
    assert gzip.decompress(sink.getvalue()) == LINES
    assert sink.getvalue() == OBJECTS[level or 6]


def test_lenses_uncompressed_is_the_default_and_other_codecs_are_refused():
    assert _plugins().value_format.extension == ".json"
    assert _plugins(**{"connect.s3.compression.codec": "UNCOMPRESSED"}).value_format.extension == ".json"
    with pytest.raises(Exception, match="connect.s3.compression.codec"):
        _plugins(**{"connect.s3.compression.codec": "SNAPPY"})
