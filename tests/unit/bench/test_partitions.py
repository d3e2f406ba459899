"""bench/partitions.py's arithmetic: the per-partition overhead is the least-squares slope of the walls over the
partition counts, per record count and command (issue 30, target 1). Benchmarks assert no times; this checks the
arithmetic and that the report renders every row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import partitions  # noqa: E402

pytestmark = pytest.mark.issue(30, item=1)


def point(count: int, per: int, backup: float, restore: float | None) -> dict:
    out = {"partitions": count, "records": count * per, "records_per_partition": per}
    out["backup"] = {"returncode": 0, "wall_s": backup, "job_s": backup / 2, "spark_start_s": 1.0}
    if restore is not None:
        out["restore"] = {"returncode": 0, "wall_s": restore, "job_s": restore / 2, "spark_start_s": 1.0}
    return out


def test_the_overhead_is_the_slope_of_the_walls_over_the_partition_counts():
    assert partitions.slope([1, 10, 100], [2.0, 2.9, 11.9]) == pytest.approx(0.1)
    assert partitions.slope([4, 4], [1.0, 2.0]) is None  # one partition count: no slope
    results = {"points": [point(1, 10, 10.0, 12.0), point(1001, 10, 20.0, None)]}
    rows = partitions.overheads(results)
    assert [(r["kind"], r["wall_s_per_partition"]) for r in rows] == [("backup", pytest.approx(0.01))]
    assert rows[0]["job_s_per_partition"] == pytest.approx(0.005)


def test_the_report_sets_the_most_partitions_beside_the_same_records_from_4():
    results = {
        "stamp": "s",
        "version": "v",
        "format": "Envelope",
        "value_size": 100,
        "restore_mode": "eos",
        "points": [point(1, 10, 10.0, 12.0), point(1000, 10, 40.0, 60.0)],
        "baselines": [{**point(4, 2500, 10.0, 15.0), "beside": 10}],
    }
    text = partitions.render(results)
    assert "| 1,000 × 10 | 40.0 | 1.0 | 20.0 | 60.0 | 1.0 | 30.0 |" in text
    assert "| 10,000 | backup | 1,000 partitions: 40.0 s | 10.0 s | 0.25× |" in text
    assert "| 10 | restore | 48.0 | 24.0 |" in text
