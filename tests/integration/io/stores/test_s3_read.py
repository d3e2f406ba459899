"""Reading from the real S3 server: head, ranged get, seekable open (Parquet footer), paged listing, deletes."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.errors import StoreError
from kafka_s3.io.stores.s3 import READ_AHEAD_BYTES

pytestmark = pytest.mark.integration

MiB = 1024 * 1024


def test_head_returns_size_etag_and_user_metadata(open_s3):
    store = open_s3()
    committed = store.create("m.bin", metadata={"schema": "v1", "records": "3"}).commit()

    info = store.head("m.bin")

    assert (info.key, info.size, info.etag) == ("m.bin", 0, committed.etag)
    assert info.metadata == {"schema": "v1", "records": "3"}
    assert info.last_modified > 1_600_000_000


def test_head_of_a_missing_key_is_none(open_s3):
    assert open_s3().head("missing.bin") is None


def test_ranged_get_is_inclusive(open_s3):
    store = open_s3()
    store.put("r.bin", b"0123456789")

    assert store.get("r.bin") == b"0123456789"
    assert store.get("r.bin", 2, 4) == b"234"
    assert store.get("r.bin", 7) == b"789"
    assert store.get("r.bin", 8, 100) == b"89"


def test_get_of_a_missing_key_names_it(open_s3):
    store = open_s3()

    with pytest.raises(StoreError, match=r"get_object s3://.*/missing.bin: no such object"):
        store.get("missing.bin")
    with pytest.raises(StoreError, match=r"open s3://.*/missing.bin: no such object"):
        store.open("missing.bin")


def test_pyarrow_reads_a_parquet_file_through_open(open_s3, fault_proxy):
    store = open_s3(endpoint=fault_proxy.url)
    table = pa.table({"offset": pa.array(range(50_000), pa.int64()), "value": [f"v{i}" for i in range(50_000)]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=10_000)
    store.put("t.parquet", sink.getvalue().to_pybytes())

    with store.open("t.parquet") as file:
        parquet = pq.ParquetFile(file)
        assert parquet.metadata.num_rows == 50_000
        assert parquet.metadata.num_row_groups == 5
        assert parquet.read().equals(table)

    ranges = [r.headers["range"] for r in fault_proxy.requests("GET", path="t.parquet")]
    assert ranges and all(r.startswith("bytes=") for r in ranges)


def test_sequential_reading_streams_in_windows(open_s3, fault_proxy):
    store = open_s3(endpoint=fault_proxy.url)
    data = random.Random(0).randbytes(20 * MiB)
    store.put("stream.bin", data)

    with store.open("stream.bin") as file:
        pieces = iter(lambda: file.read(MiB), b"")
        assert b"".join(pieces) == data

    ranges = [r.headers["range"] for r in fault_proxy.requests("GET", path="stream.bin")]
    spans = [(int(a), int(b)) for a, b in (r.removeprefix("bytes=").split("-") for r in ranges)]
    window = READ_AHEAD_BYTES
    assert spans == [(0, window - 1), (window, 2 * window - 1), (2 * window, len(data) - 1)]


def test_listing_pages_return_every_key_once_and_deleting_batches_them(open_s3, fault_proxy):
    store = open_s3(endpoint=fault_proxy.url)
    # SeaweedFS lists keys with a character below "/" (here "-", ".", "+") next to a same-stem "directory" out of byte
    # order; continuation-token paging still returns each key once, which is what the store relies on
    siblings = ["p/d-1", "p/d.txt", "p/d+0+0000000001", "p/d0", "p/e"]
    keys = [f"p/d/{i:05d}" for i in range(1050)] + siblings
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: store.put(key, b"x"), keys))

    listed = [info.key for info in store.list("p/")]

    assert len(listed) == len(keys)
    assert sorted(listed) == sorted(keys)
    pages = fault_proxy.requests("GET", query="list-type=2")
    assert len(pages) >= 2
    assert all("start-after" not in page.query for page in pages)
    assert any("continuation-token" in page.query for page in pages)
    assert sorted(info.key for info in store.list("p/d/0104")) == [f"p/d/0104{i}" for i in range(10)]

    store.delete(info.key for info in store.list("p/"))

    assert list(store.list("p/")) == []
    assert len(fault_proxy.requests("POST", query="delete")) == 2


def test_deleting_missing_keys_is_not_an_error(open_s3):
    store = open_s3()

    store.delete(["never-there.bin"])
    store.delete([])
