"""The scale curves' plot data (pure) and their PNG: rate vs records per format, and rate vs partitions.

A curve point (``results["curve"]["records"]`` / ``["partitions"]``) holds the dataset (records, partitions) and, per
format, the backup run and the restores (``--curve-restore-modes``); each run carries its 4-record baseline, so its
``rate`` (records / (wall − 4-record wall)) is computed by ``report.derive``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from report import CURVE_LINEAR, CURVE_PARTITIONS, FORMAT_LABELS, MODE_LABELS, rate, steady_rate

Points = list[tuple[int, float | None]]
Series = dict[str, Points]
Measure = Callable[[dict | None], float | None]


def _series(points: list[dict], x_key: str, measure: Measure = rate) -> Series:
    """label -> [(x, measure)] sorted by x, one label per format (backups) and per format and mode (restores)."""
    out: Series = {}
    for point in sorted(points, key=lambda p: p[x_key]):
        for fmt, runs in point.get("runs", {}).items():
            name = FORMAT_LABELS.get(fmt, fmt)
            if runs.get("backup"):
                out.setdefault(f"backup {name}", []).append((point[x_key], measure(runs["backup"])))
            for mode, run in (runs.get("restores") or {}).items():
                label = f"restore {name} {MODE_LABELS.get(mode, mode)}"
                out.setdefault(label, []).append((point[x_key], measure(run)))
    return out


def records_series(results: dict, measure: Measure = rate) -> Series:
    """By default the rate (wall − 4-record wall); ``report.steady_rate`` gives records / time inside the jobs, which
    says whether the work grows linearly without the 4-record walls' spread (a large share of a 1M-record rate)."""
    return _series(results.get("curve", {}).get("records", []), "records", measure)


def partitions_series(results: dict, measure: Measure = rate) -> Series:
    """As ``records_series``, by partition count."""
    return _series(results.get("curve", {}).get("partitions", []), "partitions", measure)


def linearity(points: Points) -> float | None:
    """Rate at the largest x ÷ rate at the x before it: 1.0 when time grows exactly linearly with records (a constant
    rate); n/a with fewer than two points or a missing rate."""
    if len(points) < 2 or points[-1][1] is None or points[-2][1] is None:
        return None
    return points[-1][1] / points[-2][1]


def retention(points: Points) -> float | None:
    """Rate at the largest x ÷ the best rate over all x: 1.0 when adding partitions never loses rate."""
    rates = [r for _, r in points if r is not None]
    if not rates or points[-1][1] is None:
        return None
    return points[-1][1] / max(rates)


def records_label(results: dict) -> str:
    points = results.get("curve", {}).get("records", [])
    if not points:
        return ""
    counts = ", ".join(f"{p['records']:,}" for p in points)
    return f"{counts} records, {points[0]['partitions']} partitions"


def partitions_label(results: dict) -> str:
    points = results.get("curve", {}).get("partitions", [])
    if not points:
        return ""
    counts = ", ".join(str(p["partitions"]) for p in points)
    return f"{points[0]['records']:,} records, {counts} partitions"


class CurveMeasure(NamedTuple):
    """One way to read a curve run as records/s; the tables, the target-6 rows and the PNG each show every one."""

    of: Measure
    name: str  # "Rate"
    meaning: str  # what the records are divided by
    seconds: str  # the run's key for that time, shown in the tables' brackets
    bracket: str
    target: str  # the measure's name in the target-6 rows


class Axis(NamedTuple):
    """One scale curve: what varies, its series and label, and how its target-6 row judges a series."""

    key: str  # "records" / "partitions": the curve point's key, and the results' list of points
    series: Callable[[dict, Measure], Series]
    label: Callable[[dict], str]
    judge: Callable[[Points], float | None]
    judged_as: str  # the tables' last column
    threshold: float
    target: str  # the target-6 row after the measure's name, formatted with the threshold
    at: str  # each judged series' suffix, formatted with its last x
    log_base: int


MEASURES = (
    CurveMeasure(rate, "Rate", "wall − 4-record wall", "wall_s", "wall", "Rate"),
    CurveMeasure(
        steady_rate,
        "Steady rate",
        "records / time inside the jobs",
        "job_s",
        "time inside the jobs",
        "Steady rate (records / time inside the jobs)",
    ),
)
AXES = (
    Axis(
        "records",
        records_series,
        records_label,
        linearity,
        "last ÷ previous",
        CURVE_LINEAR,
        "at the largest record count ≥ {:.1f}× the point before it",
        "",
        10,
    ),
    Axis(
        "partitions",
        partitions_series,
        partitions_label,
        retention,
        "last ÷ best",
        CURVE_PARTITIONS,
        "at the most partitions ≥ {:.1f}× the best over the partition counts",
        ", {} partitions",
        2,
    ),
)


def plot(results: dict, path: Path) -> bool:
    """Write the PNG: a row for the rate (wall − 4-record wall) and a row for the steady rate (records / time inside
    the jobs), a column each for records (log x) and partitions; False when there is nothing to plot or matplotlib is
    missing (``pip install -e '.[bench]'``)."""
    columns = [axis for axis in AXES if any(r for points in axis.series(results, rate).values() for _, r in points)]
    if not columns:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no PNG")
        return False
    fig, grid = plt.subplots(len(MEASURES), len(columns), figsize=(6.5 * len(columns), 9.0), squeeze=False)
    kafka = results.get("services", {}).get("kafka_kind", "")
    for row, measure in zip(grid, MEASURES, strict=True):
        for ax, axis in zip(row, columns, strict=True):
            for label, points in axis.series(results, measure.of).items():
                xs = [x for x, r in points if r is not None]
                ys = [r for _, r in points if r is not None]
                if xs:
                    ax.plot(xs, ys, marker="o", linestyle="--" if label.startswith("restore") else "-", label=label)
            ax.set_xscale("log", base=axis.log_base)
            ax.set_xlabel(axis.key)
            ax.set_ylabel(f"{measure.name.lower()}, records/s ({measure.meaning})")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
            ax.set_title(f"{measure.name.lower()} vs {axis.key} ({axis.label(results)}; {kafka})", fontsize=8)
    fig.suptitle(f"kafka-s3 scale curve, {results.get('started', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
