"""Issue 16, item 9: the progress bars of bounded runs (``backup --once``, ``restore``) show the rate and the time
left, on a real terminal (a pseudo-terminal: bars only draw there), against the real services."""

from __future__ import annotations

import re

import pytest

from tests.support.integration import run_in_terminal
from tests.support.restore import write_properties

pytestmark = pytest.mark.integration

RECORDS = 40_000
ETA = re.compile(r"ETA \d+:\d\d:\d\d")
RATE = re.compile(r"(\d[\d,]*) rec/s")


def bars(output: str, topic: str) -> list[str]:
    lines = [line for line in output.splitlines() if re.match(rf"\s*{re.escape(topic)}\s", line)]
    assert lines, f"no progress bar for {topic} in:\n{output[-3000:]}"
    return lines


def assert_rate_and_eta(output: str, topic: str) -> None:
    lines = bars(output, topic)
    final = lines[-1]
    assert f"{RECORDS}/{RECORDS}" in final or re.search(rf"\b{RECORDS}/\d+\b", final), final
    rate = RATE.search(final)
    assert rate and int(rate.group(1).replace(",", "")) > 0, final
    assert "done" in final, final
    # While it ran, every frame of the bar said how long was left: unknown before the first records moved, a time
    # once some had (how many frames catch records in flight depends on the machine's speed).
    for line in lines[:-1]:
        moving = re.search(r"\b(\d+)/(\d+)\b", line)
        if moving and 0 < int(moving.group(1)) < int(moving.group(2)):
            assert ETA.search(line) and RATE.search(line), line
        elif moving and int(moving.group(1)) == 0:
            assert "ETA -:--:--" in line and "rec/s" not in line, line


def test_bounded_backup_and_restore_bars_show_rate_and_eta(make_config, fresh_bucket, fresh_topic, produce, tmp_path):
    topic = fresh_topic(2)
    produce(
        topic,
        [{"partition": i % 2, "value": b'{"i":%d,"pad":"%s"}' % (i, b"x" * 80)} for i in range(RECORDS)],
    )
    raw, _ = make_config(fresh_bucket, topic, flush__size="2000")
    code, out = run_in_terminal(["backup", "--once", "-c", str(write_properties(tmp_path / "b.properties", raw))])
    assert code == 0, out[-3000:]
    assert_rate_and_eta(out, topic)

    restore_raw = {**raw, "topic.rename": f"{topic}:{fresh_topic(2)}"}
    code, out = run_in_terminal(["restore", "-c", str(write_properties(tmp_path / "r.properties", restore_raw))])
    assert code == 0, out[-3000:]
    assert_rate_and_eta(out, topic)
