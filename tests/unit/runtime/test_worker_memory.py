"""Issue 18 item 3: a backup task hands freed memory back to the system as it reads (worker_memory.Releaser)."""

from __future__ import annotations

from kafka_s3.runtime.worker_memory import RELEASE_EVERY_BYTES, Releaser, release


def test_releaser_releases_once_per_interval_of_bytes_read():
    calls: list[int] = []
    releaser = Releaser(every=100, action=lambda: calls.append(1))

    for size in (40, 40, 40, 90, 10, 5):  # 120 -> release, 100 -> release, 5 pending
        releaser.add(size)

    assert (len(calls), releaser.releases) == (2, 2)


def test_task_releases_every_32_mib_by_default():
    assert Releaser().every == RELEASE_EVERY_BYTES == 32 * 1024 * 1024


def test_release_runs_in_this_process():
    release()  # Arrow's pool and glibc's heap (or nothing where malloc_trim is missing)
