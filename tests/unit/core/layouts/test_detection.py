"""Issue 15 item 10: which tool wrote a prefix, told apart by object names (core/layouts/detection.py).

Every name below is built the way the peer's source builds it (facts sheet ``../shared/PEER-FORMATS.md``):

- Confluent: CS ``TopicPartitionWriter.fileKeyToCommit`` (``<topics.dir>/<topic>/<encodedPartition>/<topic>+<p>+
  <offset %010d><ext>``), sidecars per CS ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter``;
- kafka-s3: the same names built by our :class:`~kafka_s3.core.layout.Layout`, plus our chunk manifests
  (:class:`~kafka_s3.core.manifest.ManifestStore`);
- Lenses: LS ``sink/naming/FileNamer.scala`` / ``CloudKeyNamer`` (``<prefix>/<topic>/<p>/<offset %012d>_<minTs>_
  <maxTs>.<ext>``, ``<prefix>/<f>=<v>/<topic>(<p>_<offset %012d>).<ext>``), LS ``seek/IndexManagerV2`` (``.indexes/``);
- DeviantArt: DA ``BlockGZIPFileWriter.getDataFileName`` / ``S3Writer.getChunkFileKey`` (``<prefix>/<yyyy-MM-dd>/
  <topic>-<p %05d>-<offset %012d>.gz`` and ``.index.json``), DA ``S3Writer.updateCursorFile``
  (``last_chunk_index.<topic>-<p %05d>.txt``).
"""

from __future__ import annotations

import dataclasses

import pytest

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layout import Layout
from kafka_s3.core.layouts.detection import LAYOUTS, detect
from kafka_s3.core.manifest import ManifestStore, manifest_root
from kafka_s3.core.registry import import_object
from kafka_s3.pipelines.read.plugins import layout_of

CONFLUENT = [
    "topics/orders/partition=0/orders+0+0000000000.avro",
    "topics/orders/partition=0/orders+0+0000000000.keys.avro",
    "topics/orders/year=2019/month=12/day=31/hour=22/orders+1+0000000003.json.gz",
]
LENSES = [
    "topics/orders/0/000000000005_1577849400000_1577849400000.json",
    "topics/orders/0/000000000009.json",  # 5.x-7.1: no _min_max suffix
    "topics/country=fr/orders(0_000000000012).parquet",
]
DEVIANTART = [
    "topics/2017-02-01/orders-00000-000000000000.gz",
    "topics/2017-02-01/orders-00000-000000000000.gz.index.json",
    "topics/last_chunk_index.orders-00000.txt",
]


def ours() -> list[str]:
    layout = Layout()
    data = layout.object_key("orders/partition=0", "orders", 0, 0, ".avro")
    manifests = ManifestStore(None, manifest_root("topics", ".avro"))  # type: ignore[arg-type]
    return [data, manifests.key("orders", 0, 0)]


@pytest.mark.parametrize(
    "keys, layout",
    [(CONFLUENT, "confluent"), (LENSES, "lenses"), (DEVIANTART, "deviantart")],
    ids=["confluent", "lenses", "deviantart"],
)
def test_each_peers_names_are_recognised(keys, layout):
    for key in keys:
        assert detect([key, "topics/README.md"], "topics/").name == layout, key


def test_confluent_names_with_our_manifests_are_ours():
    assert detect(ours(), "topics/").name == "kafka-s3"
    assert detect(CONFLUENT + ours(), "topics/").name == "kafka-s3"


def test_our_manifests_beside_deviantarts_names_are_our_backup_in_deviantarts_layout():
    manifest = ours()[1]

    assert detect(DEVIANTART + [manifest], "topics/").name == "deviantart"


def test_lenses_indexes_at_the_bucket_root_are_lenses():
    assert detect([".indexes/backup/.locks/orders/0.lock"], "").name == "lenses"


def test_nothing_recognised_is_no_layout():
    assert detect([], "topics/").name is None
    assert detect(["topics/notes.txt", "topics/orders/readme"], "topics/").name is None


@pytest.mark.parametrize(
    "first, second, titles",
    [
        (CONFLUENT, DEVIANTART, ("Confluent's S3 sink", "DeviantArt's connector")),
        (CONFLUENT, LENSES, ("Confluent's S3 sink", "Lenses' stream-reactor")),
        (LENSES, DEVIANTART, ("Lenses' stream-reactor", "DeviantArt's connector")),
        (ours(), DEVIANTART, ("kafka-s3's", "DeviantArt's connector")),
    ],
)
def test_a_prefix_mixing_layouts_is_refused_naming_both(first, second, titles):
    with pytest.raises(LayoutError) as caught:
        detect(first + second, "topics/", where="s3://b/topics/")

    message = str(caught.value)
    assert "s3://b/topics/ mixes the objects of several tools" in message
    assert all(title in message for title in titles) and second[0] in message


def test_the_plan_line_says_which_layout():
    detection = detect(DEVIANTART, "topics/", where="s3://b/topics/")

    assert detection.describe() == (
        "layout: DeviantArt's connector, detected under s3://b/topics/ (e.g. topics/2017-02-01/orders-00000-"
        "000000000000.gz)"
    )


def source_config(layout: str):
    return SOURCE.parse({"name": "r", "s3.bucket.name": "b", "format.class": "json", "restore.layout": layout})


def test_a_layout_without_its_reader_is_refused_by_name(monkeypatch):
    absent = dataclasses.replace(LAYOUTS["lenses"], reader="kafka_s3.core.layouts.not_here:Nothing")
    monkeypatch.setitem(LAYOUTS, "lenses", absent)

    with pytest.raises(LayoutError, match="^Lenses layout: not readable by this version"):
        layout_of(source_config("lenses"))


def test_lenses_reads_with_its_reader_when_this_version_has_it():
    """The Lenses reader is issue 15 part B's plugin, registered by name
    (kafka_s3.core.peers.lenses.layout:LensesLayout): with it restore.layout=lenses reads with it, without it the layout
    is refused by name."""
    try:
        reader = import_object(LAYOUTS["lenses"].reader or "")
    except (ImportError, AttributeError):
        with pytest.raises(LayoutError, match="^Lenses layout: not readable by this version"):
            layout_of(source_config("lenses"))
    else:
        assert isinstance(layout_of(source_config("lenses")), reader)


@pytest.mark.parametrize("layout", ["auto", "confluent", "kafka-s3"])
def test_ours_and_confluents_read_with_the_standard_layout(layout):
    assert type(layout_of(source_config(layout))) is Layout
