"""Issue 15 item 9: DeviantArt's names (DA ``BlockGZIPFileWriter.getDataFileName``, ``S3Writer.getChunkFileKey``,
``S3Writer.updateCursorFile``) parsed by :class:`DeviantArtLayout`, and its connector's configuration defaults."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layouts.detection import LAYOUTS
from kafka_s3.core.peers.deviantart.layout import DeviantArtLayout
from kafka_s3.pipelines.read.plugins import ReadPlugins, layout_of

EXTENSIONS = {".gz": "data", ".index.json": "index"}
DA = {
    "name": "da",
    "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector",
    "s3.bucket": "b",
    "flush.size": "1000",
    "topics": "t",
}


def test_data_and_index_names_parse_with_their_first_offset():
    layout = DeviantArtLayout(topics_dir="pre", file_delim="-", zero_pad_width=12)

    data = layout.parse("pre/2017-02-01/system-test-00002-000000000200.gz", EXTENSIONS)
    index = layout.parse("pre/2017-02-01/system-test-00002-000000000200.index.json", EXTENSIONS)

    assert data is not None and index is not None
    assert (data.topic, data.partition, data.start_offset, data.directory, data.kind) == (
        "system-test",
        2,
        200,
        "2017-02-01",
        "data",
    )
    assert (index.topic, index.start_offset, index.kind, index.extension) == (
        "system-test",
        200,
        "index",
        ".index.json",
    )


@pytest.mark.parametrize(
    "key",
    ["pre/last_chunk_index.system-test-00000.txt", "pre/notes.gz", "other/2017-02-01/t-00000-000000000000.gz"],
)
def test_cursors_and_other_keys_are_not_objects(key):
    layout = DeviantArtLayout(topics_dir="pre")

    assert layout.parse(key, EXTENSIONS) is None


def test_a_gz_in_a_date_directory_with_another_name_is_an_error():
    with pytest.raises(LayoutError, match="pre/2017-02-01/orders.gz"):
        DeviantArtLayout(topics_dir="pre").parse("pre/2017-02-01/orders.gz", EXTENSIONS)


def test_cursor_key_is_deviantarts():
    assert DeviantArtLayout(topics_dir="pre").cursor_key("t", 3) == "pre/last_chunk_index.t-00003.txt"
    assert DeviantArtLayout(topics_dir="").cursor_key("t", 3) == "last_chunk_index.t-00003.txt"


@pytest.mark.parametrize("definition", [SINK, SOURCE], ids=["backup", "restore"])
def test_deviantart_config_takes_its_connectors_defaults(definition):
    config = definition.parse(DA)

    assert (config["format.class"], config["topics.dir"], config["s3.bucket.name"]) == ("block_gzip", "", "b")
    assert definition.parse({**DA, "s3.prefix": "pre"})["topics.dir"] == "pre"


def test_restore_layout_deviantart_reads_block_gzip_whatever_format_class():
    config = SOURCE.parse({**DA, "format.class": "json", "restore.layout": "deviantart"})
    plugins = ReadPlugins.from_config(config)

    assert isinstance(layout_of(config), DeviantArtLayout) and LAYOUTS["deviantart"].reader
    assert plugins.value_format.name == "block_gzip"
    assert plugins.extensions()[".index.json"] == "index"
