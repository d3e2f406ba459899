"""Live counts over UDP on the loopback: absolute totals per partition, rounds that never mix, and a reporter that
never fails its task when nobody listens."""

from __future__ import annotations

import socket
import time

from kafka_s3.runtime.live import INTERVAL_S, LiveCounts, LiveReporter


def wait_for(counts: LiveCounts, expected: dict, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while (snapshot := counts.snapshot()) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return snapshot


def test_reporters_totals_reach_the_listener_per_partition():
    counts = LiveCounts("127.0.0.1")
    try:
        target = counts.new_round()
        first, second = LiveReporter(target, "t", 0), LiveReporter(target, "t", 1)
        first.update(10, 1000, final=True)
        second.update(5, 50, final=True)
        assert wait_for(counts, {("t", 0): (10, 1000), ("t", 1): (5, 50)}) == {("t", 0): (10, 1000), ("t", 1): (5, 50)}
        first.update(25, 2500, final=True)  # totals replace, never add
        assert wait_for(counts, {("t", 0): (25, 2500), ("t", 1): (5, 50)})[("t", 0)] == (25, 2500)
    finally:
        counts.close()


def test_updates_are_rate_limited_but_the_final_one_always_goes():
    counts = LiveCounts("127.0.0.1")
    try:
        reporter = LiveReporter(counts.new_round(), "t", 0)
        reporter.update(1, 1)  # sent: the first update of a reporter
        for n in range(2, 100):
            reporter.update(n, n)  # within INTERVAL_S: dropped
        time.sleep(0.2)
        assert counts.snapshot() == {("t", 0): (1, 1)}
        assert INTERVAL_S > 0.2
        reporter.update(100, 100, final=True)
        assert wait_for(counts, {("t", 0): (100, 100)}) == {("t", 0): (100, 100)}
    finally:
        counts.close()


def test_a_new_round_forgets_the_old_counts_and_ignores_late_datagrams():
    counts = LiveCounts("127.0.0.1")
    try:
        old = counts.new_round()
        LiveReporter(old, "t", 0).update(7, 7, final=True)
        assert wait_for(counts, {("t", 0): (7, 7)}) == {("t", 0): (7, 7)}
        new = counts.new_round()
        assert counts.snapshot() == {}
        LiveReporter(old, "t", 0).update(9, 9, final=True)  # a straggler of the previous round
        LiveReporter(new, "t", 1).update(3, 3, final=True)
        assert wait_for(counts, {("t", 1): (3, 3)}) == {("t", 1): (3, 3)}
    finally:
        counts.close()


def test_stray_datagrams_are_ignored():
    counts = LiveCounts("127.0.0.1")
    try:
        target = counts.new_round()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"not json", counts.address)
            sender.sendto(b'{"round": 1}', counts.address)
        LiveReporter(target, "t", 0).update(1, 2, final=True)
        assert wait_for(counts, {("t", 0): (1, 2)}) == {("t", 0): (1, 2)}
    finally:
        counts.close()


def test_a_reporter_without_a_listener_never_fails():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reporter = LiveReporter(("127.0.0.1", port, 1), "t", 0)  # nobody listens there any more
    for n in range(3):
        reporter.update(n, n, final=True)
    reporter.close()
    LiveReporter(None, "t", 0).update(1, 1, final=True)  # live progress off
    LiveReporter(("no-such-host.invalid", 1, 1), "t", 0).update(1, 1, final=True)
