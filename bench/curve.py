"""The scale curves' plot data (pure) and their PNG: rate vs records per format, and rate vs partitions.

A curve point (``results["curve"]["records"]`` / ``["partitions"]``) holds the dataset (records, partitions) and, per
format, the backup run and the restores (``--curve-restore-modes``); each run carries its 4-record baseline, so its
``rate`` (records / (wall − 4-record wall)) is computed by ``report.derive``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from report import FORMAT_LABELS, MODE_LABELS, rate, steady_rate

Series = dict[str, list[tuple[int, float | None]]]
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


def linearity(points: list[tuple[int, float | None]]) -> float | None:
    """Rate at the largest x ÷ rate at the x before it: 1.0 when time grows exactly linearly with records (a constant
    rate); n/a with fewer than two points or a missing rate."""
    if len(points) < 2 or points[-1][1] is None or points[-2][1] is None:
        return None
    return points[-1][1] / points[-2][1]


def retention(points: list[tuple[int, float | None]]) -> float | None:
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


def plot(results: dict, path: Path) -> bool:
    """Write the PNG: a row for the rate (wall − 4-record wall) and a row for the steady rate (records / time inside
    the jobs), a column each for records (log x) and partitions; False when there is nothing to plot or matplotlib is
    missing (``pip install -e '.[bench]'``)."""
    rows = [(rate, "rate, records/s (wall − 4-record wall)"), (steady_rate, "steady rate, records/s (inside the jobs)")]
    columns = [
        (series_of, x)
        for series_of, x in ((records_series, "records"), (partitions_series, "partitions"))
        if any(r for points in series_of(results).values() for _, r in points)
    ]
    if not columns:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no PNG")
        return False
    fig, axes = plt.subplots(len(rows), len(columns), figsize=(6.5 * len(columns), 9.0), squeeze=False)
    kafka = results.get("services", {}).get("kafka_kind", "")
    for row, (measure, y_label) in enumerate(rows):
        for ax, (series_of, x_name) in zip(axes[row], columns, strict=True):
            for label, points in series_of(results, measure).items():
                xs = [x for x, r in points if r is not None]
                ys = [r for _, r in points if r is not None]
                if xs:
                    ax.plot(xs, ys, marker="o", linestyle="--" if label.startswith("restore") else "-", label=label)
            ax.set_xscale("log", base=10 if x_name == "records" else 2)
            ax.set_xlabel(x_name)
            ax.set_ylabel(y_label)
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
            title = records_label(results) if x_name == "records" else partitions_label(results)
            ax.set_title(f"{y_label.split(',')[0]} vs {x_name} ({title}; {kafka})", fontsize=8)
    fig.suptitle(f"kafka-s3 scale curve, {results.get('started', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
