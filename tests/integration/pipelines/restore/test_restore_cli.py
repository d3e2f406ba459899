"""The command line of a backup and its restore: live progress bars on a terminal, ``restore --topics`` and
``restore --follow`` stopped by a signal. ``kafka-s3`` runs as a subprocess, as an operator runs it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import run_in_terminal
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

PER_PARTITION = 15_000


def write_properties(path, raw: dict) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in raw.items()))
    return str(path)


def final_bar(output: str, topic: str) -> str:
    """The last line the terminal showed for ``topic``'s bar."""
    lines = [line for line in output.splitlines() if re.match(rf"\s*{re.escape(topic)}\s", line)]
    assert lines, f"no progress bar for {topic} in:\n{output[-3000:]}"
    return lines[-1]


def values(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    return {p: [r["value"] for r in rows] for p, rows in read_topic(bootstrap, topic).items()}


def test_progress_bars_and_a_restore_of_only_the_topics_asked(
    make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    first, second = fresh_topic(2), fresh_topic(1)
    produce(
        first,
        [
            {"partition": i % 2, "key": b"k%d" % i, "value": b'{"i":%d,"pad":"%s"}' % (i, b"x" * 80)}
            for i in range(2 * PER_PARTITION)
        ],
    )
    produce(second, [{"value": b'{"i":%d}' % i} for i in range(10)])
    raw, _ = make_config(fresh_bucket, [first, second], flush__size="2500")

    code, out = run_in_terminal(["backup", "--once", "-c", write_properties(tmp_path / "b.properties", raw)])
    assert code == 0, out[-3000:]
    bar = final_bar(out, first)
    assert f"{2 * PER_PARTITION}/{2 * PER_PARTITION}" in bar and "MB read" in bar, bar
    assert "10/10" in final_bar(out, second)

    restore_raw = {
        **raw,
        "topic.rename": f"{first}:{first}-copy,{second}:{second}-copy",
        "topic.creation.enable": "true",
        "topic.creation.default.retention.ms": "-1",
    }
    code, out = run_in_terminal(
        ["restore", "-c", write_properties(tmp_path / "r.properties", restore_raw), "--topics", first]
    )
    assert code == 0, out[-3000:]
    bar = final_bar(out, first)
    # produced / estimated from the objects' names and sizes (12 objects of 2,500 records: exact here)
    assert re.search(rf"\b{2 * PER_PARTITION}/\d+\b", bar) and "MB produced" in bar, bar
    assert "restore summary" in out and f"{2 * PER_PARTITION} records restored" in out

    assert values(kafka_bootstrap, f"{first}-copy") == values(kafka_bootstrap, first)
    assert f"{second}-copy" not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()  # not asked for


def test_restore_follow_keeps_restoring_until_signalled(
    make_config, fresh_bucket, fresh_topic, produce, backup, kafka_bootstrap, tmp_path
):
    topic, target = fresh_topic(1), fresh_topic(1)
    produce(topic, [{"value": b'{"i":%d}' % i} for i in range(6)])
    backup(fresh_bucket, topic, {"flush.size": "3"})
    raw, _ = make_config(fresh_bucket, topic, topic__rename=f"{topic}:{target}", s3__poll__interval__ms="300")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_s3.cli",
            "restore",
            "--follow",
            "-c",
            write_properties(tmp_path / "r.properties", raw),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    try:

        def restored() -> int:
            return sum(len(v) for v in values(kafka_bootstrap, target).values())

        def wait_for(count: int) -> None:
            deadline = time.monotonic() + 180
            while restored() < count:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, f"restore --follow did not reach {count} records"
                time.sleep(0.5)

        wait_for(6)
        produce(topic, [{"value": b'{"i":%d}' % i} for i in range(6, 12)])
        backup(fresh_bucket, topic, {"flush.size": "3"})
        wait_for(12)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out[-3000:]  # 128 + SIGTERM
    assert "Traceback" not in out, out[-3000:]
    assert values(kafka_bootstrap, target) == values(kafka_bootstrap, topic)
