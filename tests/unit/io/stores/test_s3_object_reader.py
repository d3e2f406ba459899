"""The seekable S3 reader: ranged GETs through a read-ahead window, exact file semantics."""

from __future__ import annotations

import io

import pytest

from kafka_s3.core.errors import StoreError
from kafka_s3.io.stores.s3 import S3ObjectReader

DATA = bytes(range(100))


class RangedStore:
    """Serves inclusive byte ranges of DATA and records them."""

    url = "s3://b"

    def __init__(self, data: bytes = DATA):
        self.data = data
        self.ranges: list[tuple[int, int]] = []

    def get(self, key: str, start: int, end: int) -> bytes:
        self.ranges.append((start, end))
        return self.data[start : end + 1]


def reader(store: RangedStore, read_ahead: int = 16) -> S3ObjectReader:
    return S3ObjectReader(store, "k", len(DATA), read_ahead=read_ahead)  # type: ignore[arg-type]


def test_sequential_reads_go_window_by_window():
    store = RangedStore()
    file = reader(store)

    chunks = [file.read(10) for _ in range(10)]

    assert b"".join(chunks) == DATA
    assert file.read(10) == b""
    assert store.ranges == [(0, 15), (16, 31), (32, 47), (48, 63), (64, 79), (80, 95), (96, 99)]


def test_reads_inside_the_window_cost_no_request():
    store = RangedStore()
    file = reader(store)
    file.read(1)
    file.seek(8)
    file.read(4)
    file.seek(0)
    file.read(16)

    assert store.ranges == [(0, 15)]


def test_a_read_larger_than_the_window_is_one_request():
    store = RangedStore()
    file = reader(store, read_ahead=8)
    file.seek(10)

    assert file.read(50) == DATA[10:60]
    assert store.ranges == [(10, 59)]


def test_seek_from_end_reads_a_footer_without_reading_the_rest():
    store = RangedStore()
    file = reader(store)

    assert file.seek(-8, io.SEEK_END) == 92
    assert file.read() == DATA[92:]
    assert store.ranges == [(92, 99)]


def test_seek_relative_and_tell():
    file = reader(RangedStore())
    file.seek(20)
    file.seek(5, io.SEEK_CUR)

    assert file.tell() == 25
    assert file.read(3) == DATA[25:28]
    assert file.tell() == 28


def test_read_all_and_past_the_end():
    file = reader(RangedStore())
    file.seek(90)

    assert file.read() == DATA[90:]
    file.seek(500)
    assert file.read(10) == b""


def test_readinto_and_buffered_wrapping():
    file = reader(RangedStore())
    target = bytearray(5)

    assert file.readinto(target) == 5
    assert bytes(target) == DATA[:5]
    assert io.BufferedReader(reader(RangedStore()), buffer_size=7).read() == DATA


def test_negative_seek_is_refused():
    with pytest.raises(ValueError):
        reader(RangedStore()).seek(-1)


def test_a_short_answer_is_an_error_not_a_loop():
    store = RangedStore(DATA[:50])  # the object shrank under us
    file = reader(store, read_ahead=64)

    with pytest.raises(StoreError, match="asked for bytes 0-99, got 50"):
        file.read()


def test_closed_reader_refuses_reads():
    file = reader(RangedStore())
    file.close()

    assert file.closed
    with pytest.raises(ValueError):
        file.read(1)
