"""The part buffer keeps at most its memory limit in memory and spills the rest to a temporary file."""

from __future__ import annotations

from kafka_s3.io.stores.spill import SpillBuffer


def content(buffer: SpillBuffer) -> bytes:
    body = buffer.body()
    return body if isinstance(body, bytes) else body.read()


def test_small_content_stays_in_memory():
    buffer = SpillBuffer(memory_limit=10)
    buffer.write(b"12345")
    buffer.write(memoryview(b"67890"))

    assert (buffer.spilled, buffer.size, buffer.memory_bytes) == (False, 10, 10)
    assert buffer.body() == b"1234567890"  # one bytes body: sent in one write


def test_content_beyond_the_limit_moves_to_disk_whole():
    buffer = SpillBuffer(memory_limit=10)
    buffer.write(b"12345")
    buffer.write(b"678901")

    assert (buffer.spilled, buffer.size, buffer.memory_bytes) == (True, 11, 0)
    assert content(buffer) == b"12345678901"
    buffer.write(b"more")
    assert content(buffer) == b"12345678901more"


def test_body_can_be_read_again_for_a_retry():
    buffer = SpillBuffer(memory_limit=0)
    buffer.write(b"abc")

    assert content(buffer) == b"abc"
    assert content(buffer) == b"abc"


def test_closed_buffer_holds_no_memory():
    buffer = SpillBuffer(memory_limit=100)
    buffer.write(b"abc")
    buffer.close()

    assert buffer.memory_bytes == 0


def test_a_shared_budget_bounds_many_buffers_together():
    from kafka_s3.io.stores.spill import MemoryBudget, SpillBuffer

    budget = MemoryBudget(1000)
    buffers = [SpillBuffer(400, budget) for _ in range(5)]
    for buffer in buffers:
        buffer.write(b"x" * 300)
    assert budget.used <= 1000
    assert sum(b.memory_bytes for b in buffers) == budget.used == 900
    assert [b.spilled for b in buffers] == [False, False, False, True, True]
    buffers[0].write(b"y" * 200)  # over its own limit: spills, returning its 300 bytes to the budget
    assert buffers[0].spilled and budget.used == 600
    for buffer in buffers:
        buffer.close()
    assert budget.used == 0
