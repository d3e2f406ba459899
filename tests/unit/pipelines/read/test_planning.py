"""Issue 18 item 5: the one planner of every reader chooses the objects whose offset (and recorded time) spans meet
what a read asks for; reading a partition opens only those."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.layout import ObjectName
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.read.discovery import BackupObject, discover
from kafka_s3.pipelines.read.integrity import with_records
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.planning import HIGH, LOW, Ranges, Selection, select_objects
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import read_partition

TOPIC = "orders"


def obj(start: int, directory: str = "d", last: int | None = None, times: tuple[int, int] | None = None):
    key = f"topics/{TOPIC}/{directory}/{TOPIC}+0+{start:010d}.json"
    name = ObjectName(
        key=key,
        topic=TOPIC,
        partition=0,
        start_offset=start,
        directory=f"topics/{TOPIC}/{directory}",
        extension=".json",
        kind="data",
    )
    first_ts, last_ts = times if times is not None else (None, None)
    return BackupObject(name, 10, last_offset=last, first_timestamp=first_ts, last_timestamp=last_ts)


def starts(objects) -> list[int]:
    return [o.start for o in objects]


# ------------------------------------------------------------------------------------------------------ ranges
spans = st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)), max_size=5)
DOMAIN = range(-25, 26)


def members(ranges: Ranges) -> set[int]:
    return {v for v in DOMAIN if v in ranges}


@settings(deadline=None)  # the first call pays pyarrow.compute's start-up
@given(spans, spans)
def test_ranges_are_sets_of_integers(a, b):
    ra, rb = Ranges.of(a), Ranges.of(b)
    expected_a = {v for low, high in a for v in range(low, high)}
    assert members(ra) == expected_a
    assert members(ra & rb) == expected_a & {v for low, high in b for v in range(low, high)}
    assert all(x[1] < y[0] for x, y in zip(ra.spans, ra.spans[1:], strict=False))  # disjoint, not adjacent
    column = pa.array(list(DOMAIN) + [None], pa.int64())
    assert [v for v, m in zip(column.to_pylist(), ra.mask(column).to_pylist(), strict=True) if m] == sorted(expected_a)


@given(spans, st.integers(-25, 25), st.integers(-25, 25))
def test_meets_tells_whether_a_span_holds_a_member(a, low, high):
    ranges = Ranges.of(a)
    assert ranges.meets(low, high) == any(v in ranges for v in range(low, high))


def test_ranges_tell_unbounded_and_empty_and_give_their_hull():
    assert Ranges().unbounded and Ranges().hull() == (None, None)
    assert Ranges.values([7, 3, 4]).hull() == (3, 8)
    assert Ranges.between(5).spans == ((5, HIGH),) and Ranges.between(None, 5).spans == ((LOW, 5),)
    assert Ranges.values([]).empty


# ------------------------------------------------------------------------------------------------- the planner
ONE_DIRECTORY = [obj(s) for s in (0, 100, 200, 300, 400)]


def test_point_lookups_choose_the_objects_holding_them():
    ten = Selection(offsets=Ranges.values(range(250, 260)))
    assert starts(select_objects(ONE_DIRECTORY, ten, contiguous=True)) == [200]
    scattered = Selection(offsets=Ranges.values([5, 99, 401, 10_000]))
    assert starts(select_objects(ONE_DIRECTORY, scattered, contiguous=True)) == [0, 400]  # the last one is open
    assert starts(select_objects(ONE_DIRECTORY, Selection(), contiguous=True)) == [0, 100, 200, 300, 400]
    assert select_objects(ONE_DIRECTORY, Selection(offsets=Ranges.values([])), contiguous=True) == []
    assert select_objects(ONE_DIRECTORY, Selection(topics=frozenset()), contiguous=True) == []


def test_bounds_choose_the_object_holding_from_up_to_the_one_before_until():
    """``[from, until)`` of a restore or ``kafka-s3 read``: the object holding ``from`` up to the one before
    ``until``."""
    chosen = select_objects(ONE_DIRECTORY, Selection.of_bounds(Bounds(150, 300)), contiguous=True)
    assert starts(chosen) == [100, 200]
    assert starts(select_objects(ONE_DIRECTORY, Selection.of_bounds(Bounds(400)), contiguous=True)) == [400]


def test_a_recorded_last_offset_ends_an_object():
    objects = [obj(0, last=49), obj(100, last=149)]  # 50..99: not in the backup (compaction)
    assert starts(select_objects(objects, Selection(offsets=Ranges.values([60])), contiguous=True)) == []
    assert starts(select_objects(objects, Selection(offsets=Ranges.values([160])), contiguous=True)) == []


def test_objects_in_several_directories_span_to_their_recorded_last_offset_or_beyond():
    objects = [obj(0, "a", last=300), obj(10, "b", last=20), obj(50, "b"), obj(400, "a", last=500)]
    picked = select_objects(objects, Selection(offsets=Ranges.values([30])), contiguous=False)
    assert starts(picked) == [0]  # 10..20 ends before; 50.. starts after
    picked = select_objects(objects, Selection(offsets=Ranges.values([450])), contiguous=False)
    assert starts(picked) == [50, 400]  # 50's end is unknown: kept


def test_record_times_choose_objects_and_unknown_times_keep_them():
    objects = [obj(0, times=(1_000, 1_999)), obj(100), obj(200, times=(3_000, 3_999)), obj(300, times=(2_000, 2_500))]
    window = Selection.of_bounds(Bounds(from_timestamp=2_000, until_timestamp=3_000))
    assert starts(select_objects(objects, window, contiguous=True)) == [100, 300]
    at = Selection(times_us=Ranges.values([1_999_000]))
    assert starts(select_objects(objects, at, contiguous=True)) == [0, 100]
    at = Selection(times_us=Ranges.values([1_999_001]))  # within the millisecond 1999
    assert starts(select_objects(objects, at, contiguous=True)) == [0, 100]


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=8, unique=True),
    st.lists(st.integers(0, 60), max_size=6),
    st.integers(0, 20),
)
def test_every_record_asked_for_is_in_a_chosen_object(starts_, wanted, extra):
    """Objects of one directory; each record offset belongs to the object with the greatest start <= it."""
    ordered = sorted(starts_)
    objects = [obj(s) for s in ordered]
    records = range(ordered[0], ordered[-1] + extra + 1)
    chosen = {o.start for o in select_objects(objects, Selection(offsets=Ranges.values(wanted)), contiguous=True)}
    for offset in records:
        holder = max(s for s in ordered if s <= offset)
        if offset in wanted:
            assert holder in chosen
    for start in chosen:  # and every chosen object holds one
        nxt = min((s for s in ordered if s > start), default=HIGH)
        assert any(start <= w < nxt for w in wanted)


def test_selections_intersect_their_topics_partitions_and_offsets():
    a = Selection(topics=frozenset({"x", "y"}), partitions=Ranges.values([0, 1]))
    b = Selection(topics=frozenset({"y"}), offsets=Ranges.between(5))
    both = a & b
    assert both.topics == frozenset({"y"}) and both.wants("y", 1) and not both.wants("x", 1)
    assert not both.wants("y", 2) and both.offsets == Ranges.between(5)
    assert (Selection() & a).topics == a.topics
    assert Selection(offsets=Ranges.values([3, 9])).offset_bounds() == Bounds(3, 10)


# ------------------------------------------------------------------------------------- reading a partition
class RecordingStore:
    def __init__(self, inner):
        self.inner = inner
        self.opened: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def open(self, key):
        self.opened.append(key)
        return self.inner.open(key)

    def get(self, key, start=None, end=None):
        self.opened.append(key)
        return self.inner.get(key, start, end)


def raw_config(root) -> dict[str, str]:
    return {
        "name": "t",
        "topics": TOPIC,
        "flush.size": "50",
        "s3.bucket.name": "b",
        "format.class": "parquet",
        "store.envelope": "true",
        "store.url": f"file://{root}",
    }


def test_a_selection_reads_only_the_objects_holding_its_offsets(tmp_path):
    config = SINK.parse(raw_config(tmp_path))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    writer.write(make_batch([{"offset": o, "topic": TOPIC, "value": b"v%d" % o} for o in range(500)]))
    writer.finish(500, flush_open=True)
    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(tmp_path)))
    recording = RecordingStore(store)
    part = discover(recording, plugins)[(TOPIC, 0)]
    assert len(part.objects) == 10

    wanted = [123, 125, 127, 349]
    batches = read_partition(recording, plugins, part, selection=Selection(offsets=Ranges.values(wanted)))
    rows = [(r["offset"], r["value"]) for b in batches for r in b.to_pylist()]
    assert rows == [(o, b"v%d" % o) for o in wanted]
    opened = sorted(k.rsplit("+", 1)[1] for k in recording.opened)
    assert opened == ["0000000100.snappy.parquet", "0000000300.snappy.parquet"]

    recording.opened.clear()  # bounds and a selection together: what both ask for
    batches = read_partition(
        recording, plugins, part, Bounds(125, 300), selection=Selection(offsets=Ranges.values(wanted))
    )
    assert [r["offset"] for b in batches for r in b.to_pylist()] == [125, 127]
    assert [k.rsplit("+", 1)[1] for k in recording.opened] == ["0000000100.snappy.parquet"]


# ------------------------------------------------------------------------------------------ record-time spans
def test_manifests_record_each_data_file_s_time_span_and_time_bounds_read_only_those_files(tmp_path):
    config = SINK.parse(raw_config(tmp_path))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    base = 1_700_000_000_000
    batch = [{"offset": o, "topic": TOPIC, "value": b"v%d" % o, "timestamp": base + 10 * o} for o in range(500)]
    writer.write(make_batch(batch))
    writer.finish(500, flush_open=True)
    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(tmp_path)))
    manifests = list(plugins.manifests(store).load_topic(TOPIC).values())
    entries = [f for pm in manifests for m in pm.chunks for f in m.files if f.kind == "data"]
    assert [(f.first_timestamp, f.last_timestamp) for f in entries][:2] == [
        (base, base + 490),
        (base + 500, base + 990),
    ]

    recording = RecordingStore(store)
    parts = discover(recording, plugins)
    with_records(parts, manifests)
    part = parts[(TOPIC, 0)]
    spans: list[tuple] = []
    # A restore's --from-timestamp/--until-timestamp: records at offsets 120..129 (times base+1200 .. base+1299).
    bounds = Bounds(from_timestamp=base + 1200, until_timestamp=base + 1300)
    batches = read_partition(recording, plugins, part, bounds, on_span=lambda o, f, la: spans.append((o.start, f, la)))
    assert [r["offset"] for b in batches for r in b.to_pylist()] == list(range(120, 130))
    assert [k.rsplit("+", 1)[1] for k in recording.opened] == ["0000000100.snappy.parquet"]
    # The objects left out for their times are in the backup: told as whole spans, so no gap is reported.
    assert sorted(spans) == [(s, s, s + 49) for s in range(0, 500, 50)]


def test_manifests_without_record_times_keep_their_bytes():
    from kafka_s3.core.manifest import FileEntry, Manifest

    old = b'{"end":2,"files":[{"ambiguous":0,"bytes":10,"directory":"","first_offset":0,"key":"k","kind":"data",'
    old += b'"last_offset":2,"records":3}],"partition":0,"start":0,"topic":"t","version":1}'
    assert Manifest.from_bytes(old).to_bytes() == old
    timed = Manifest("t", 0, 0, 2, (FileEntry("k", "data", 3, 0, 2, 10, "", 0, 5, 9),))
    assert Manifest.from_bytes(timed.to_bytes()) == timed
    assert b'"first_timestamp":5' in timed.to_bytes()
