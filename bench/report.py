"""Derived numbers (rates, ratios, targets) and the Markdown report of one benchmark run.

Every comparison is a ratio of two rates measured in the same run. "Steady" rates count only the time inside the
Spark jobs (kafka-s3) or from the first record to the end (Quix); "end-to-end" rates use the whole wall time of the
process, start-up included.
"""

from __future__ import annotations

from common import MiB

FORMAT_LABELS = {
    "bytearray": "ByteArray",
    "json-gzip": "JSON+gzip",
    "avro-deflate": "Avro+deflate",
    "parquet-snappy": "Parquet+snappy",
    "envelope-avro": "Envelope (Avro+deflate)",
}
MODE_LABELS = {"eos": "exactly-once", "alo": "at-least-once"}
# The peer's format compared with each kafka-s3 format (None: the faster of the peer's formats).
PEER_MATCH = {"json-gzip": "json", "parquet-snappy": "parquet"}
BACKUP_TARGETS = {
    "bytearray": 0.60,
    "json-gzip": 0.60,
    "avro-deflate": 0.40,
    "parquet-snappy": 0.40,
    "envelope-avro": 0.40,
}
RESTORE_TARGETS = {"alo": 0.50, "eos": 0.35}
PEER_FACTOR = 3.0
MEMORY_LIMIT = 1024 * MiB


# ---------------------------------------------------------------------------------------------------- derived numbers
def ok(run: dict | None) -> bool:
    return (
        bool(run)
        and not run.get("error")
        and not run.get("timed_out")
        and not run.get("incomplete")
        and not run.get("skipped")
    )


def steady_rate(run: dict | None) -> float | None:
    if not ok(run) or not run.get("job_s"):
        return None
    return run["records"] / run["job_s"]


def wall_rate(run: dict | None) -> float | None:
    if not ok(run) or not run.get("wall_s"):
        return None
    seconds = run.get("done_s") or run["wall_s"]  # Quix: until the work was done, not until its shutdown ended
    return run["records"] / seconds


def best_rate(samples: list[dict] | None) -> float | None:
    rates = [s["records_per_s"] for s in samples or [] if s and "records_per_s" in s]
    return max(rates) if rates else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def peer_rate(variant: dict, mode: str, fmt: str, kind=steady_rate) -> tuple[float | None, str]:
    """The Quix rate a kafka-s3 format is compared with, and which Quix run it is."""
    runs = variant.get("peer", {}).get(mode, {})
    match = PEER_MATCH.get(fmt)
    if match and kind(runs.get(match)):
        return kind(runs[match]), match
    rated = [(kind(r), name) for name, r in runs.items() if kind(r)]
    return max(rated) if rated else (None, "")


def derive(results: dict) -> None:
    """Add rates and ratios to every run of ``results`` (in place) and evaluate the targets."""
    targets = []
    for variant in results.get("variants", []):
        ds = variant["dataset"]
        per_record_bytes = ds["payload_bytes"] / ds["records"]
        consume = best_rate(variant["limits"].get("raw_consume"))
        produce = best_rate(variant["limits"].get("raw_produce"))
        variant["limits"]["raw_consume_best"] = consume
        variant["limits"]["raw_produce_best"] = produce
        for kind, table in (("backup", variant.get("backups", {})), ("restore", variant.get("restores", {}))):
            for fmt, entry in table.items():
                runs = entry.items() if kind == "restore" else [(None, entry)]
                for _mode, run in runs:
                    _rates(run, per_record_bytes)
                    limit = consume if kind == "backup" else produce
                    run["vs_limit"] = ratio(run.get("steady_rate"), limit)
                    run["vs_limit_end_to_end"] = ratio(run.get("wall_rate"), limit)
                    peer, peer_name = peer_rate(variant, "sink" if kind == "backup" else "source", fmt)
                    peer_wall, _ = peer_rate(variant, "sink" if kind == "backup" else "source", fmt, wall_rate)
                    run["vs_peer"] = ratio(run.get("steady_rate"), peer)
                    run["vs_peer_end_to_end"] = ratio(run.get("wall_rate"), peer_wall)
                    run["peer_compared"] = peer_name
        for mode, mode_runs in variant.get("peer", {}).items():
            for run in mode_runs.values():
                _rates(run, per_record_bytes)
                limit = consume if mode == "sink" else produce
                run["vs_limit"] = ratio(run.get("steady_rate"), limit)
                run["vs_limit_end_to_end"] = ratio(run.get("wall_rate"), limit)
        targets.extend(_variant_targets(variant))
    memory = results.get("memory_case")
    if memory:
        main = next(
            (v for v in results.get("variants", []) if v["dataset"]["label"] in memory.get("dataset_label", "")), None
        )
        if main:
            _rates(memory, main["dataset"]["payload_bytes"] / main["dataset"]["records"])
            baseline = main.get("backups", {}).get("bytearray")
            if ok(baseline) and ok(memory):
                memory["vs_bytearray_backup_rss"] = memory["peak_rss"] - baseline["peak_rss"]
                memory["vs_bytearray_backup_pss"] = memory["peak_pss"] - baseline["peak_pss"]
        held = ok(memory) and memory["peak_rss"] < MEMORY_LIMIT
        targets.append(
            {
                "target": "Peak RSS, 1,000 open files (Field partitioner), s3.part.size=5 MiB, < 1 GiB",
                "variant": memory.get("dataset_label", ""),
                "measured": f"{memory['peak_rss'] / MiB:,.0f} MiB (PSS {memory.get('peak_pss', 0) / MiB:,.0f} MiB)"
                if ok(memory)
                else "skipped (time budget)"
                if memory.get("skipped")
                else "failed",
                "held": held if ok(memory) else None,
            }
        )
    results["targets"] = targets


def _rates(run: dict, per_record_bytes: float) -> None:
    run["steady_rate"] = steady_rate(run)
    run["wall_rate"] = wall_rate(run)
    run["steady_mb_s"] = run["steady_rate"] * per_record_bytes / 1e6 if run["steady_rate"] else None
    if run.get("spark_start_s") is not None and run.get("wall_s"):
        run["other_s"] = max(0.0, run["wall_s"] - run["spark_start_s"] - run.get("job_s", 0.0))


def _judge(label: str, variant: dict, items: list[tuple[str, float | None]], threshold: float, unit: str) -> dict:
    measured = [(name, value) for name, value in items if value is not None]
    missing = [name for name, value in items if value is None]
    text = ", ".join(f"{name} {value:.2f}{unit} {'✓' if value >= threshold else '✗'}" for name, value in measured)
    if missing:
        text += ("; " if text else "") + "n/a: " + ", ".join(missing)
    return {
        "target": label,
        "variant": variant["dataset"]["label"],
        "measured": text or "n/a",
        "held": (
            all(v >= threshold for _, v in measured)
            if measured and not missing
            else (False if any(v < threshold for _, v in measured) else None)
        ),
    }


def _variant_targets(variant: dict) -> list[dict]:
    out = []
    backups = variant.get("backups", {})
    restores = variant.get("restores", {})
    for threshold, label in (
        (0.60, "Backup ByteArray/JSON ≥ 60% of raw confluent-kafka consume"),
        (0.40, "Backup Avro/Parquet (and envelope) ≥ 40% of raw consume"),
    ):
        fmts = [f for f in backups if BACKUP_TARGETS.get(f) == threshold]
        if fmts:
            out.append(
                _judge(label, variant, [(FORMAT_LABELS[f], backups[f].get("vs_limit")) for f in fmts], threshold, "×")
            )
    if backups and variant.get("peer", {}).get("sink"):
        out.append(
            _judge(
                "Backup ≥ 3× Quix Streams FileSink",
                variant,
                [(FORMAT_LABELS[f], r.get("vs_peer")) for f, r in backups.items()],
                PEER_FACTOR,
                "×",
            )
        )
    if restores and variant.get("peer", {}).get("source"):
        out.append(
            _judge(
                "Restore ≥ 3× Quix Streams FileSource",
                variant,
                [
                    (f"{FORMAT_LABELS[f]} {MODE_LABELS[m]}", r.get("vs_peer"))
                    for f, modes in restores.items()
                    for m, r in modes.items()
                ],
                PEER_FACTOR,
                "×",
            )
        )
    for mode, threshold in RESTORE_TARGETS.items():
        items = [(FORMAT_LABELS[f], modes[mode].get("vs_limit")) for f, modes in restores.items() if mode in modes]
        if items:
            out.append(
                _judge(f"Restore {MODE_LABELS[mode]} ≥ {threshold:.0%} of raw produce", variant, items, threshold, "×")
            )
    return out


# ---------------------------------------------------------------------------------------------------- markdown
def _n(value, digits=1, suffix="") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{suffix}"
    return f"{value:,}{suffix}"


def _rate(value) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _x(value) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def _mib(value) -> str:
    return "n/a" if not value else f"{value / MiB:,.0f}"


def _run_row(label: str, run: dict | None) -> str:
    if not run or run.get("skipped"):
        return f"| {label} | {'skipped (' + run['skipped'] + ')' if run else 'not run'} |" + " |" * 10
    status = (
        ""
        if ok(run)
        else (" ⚠ timed out" if run.get("timed_out") else " ⚠ failed" if run.get("error") else " ⚠ incomplete")
    )
    start = run.get("spark_start_s") if run.get("spark_start_s") is not None else run.get("startup_s")
    return (
        f"| {label}{status} | {_n(run.get('records'))} | {_n(run.get('wall_s'))} | {_n(start)} | "
        f"{_n(run.get('job_s'))} | {_n(run.get('other_s'))} | {_rate(run.get('steady_rate'))} | "
        f"{_n(run.get('steady_mb_s'))} | {_rate(run.get('wall_rate'))} | "
        f"{_mib(run.get('peak_rss'))} ({_mib(run.get('peak_pss'))}) | "
        f"{_x(run.get('vs_limit'))} ({_x(run.get('vs_limit_end_to_end'))}) | "
        f"{_x(run.get('vs_peer'))} ({_x(run.get('vs_peer_end_to_end'))}) |"
    )


RUN_HEADER = (
    "| run | records | wall s | start s | steady s | other s | steady rec/s | steady MB/s | end-to-end rec/s | "
    "peak RSS MiB (PSS) | vs limit: steady (end-to-end) | vs Quix: steady (end-to-end) |\n"
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
)


def render(results: dict) -> str:
    lines = [f"# kafka-s3 benchmark, {results['started']}", ""]
    m = results.get("machine", {})
    lines += [
        f"- Machine: {m.get('cpus')} CPUs, {m.get('memory_gib', 0):.1f} GiB RAM, load average "
        f"{m.get('load_start')} at start, {m.get('load_end')} at end ({m.get('platform', '')})",
        f"- Services: Kafka {results['services'].get('kafka')}; S3 {results['services'].get('s3')}",
        f"- Versions: {', '.join(f'{k} {v}' for k, v in results.get('versions', {}).items())}",
        f"- Command: `{results.get('command', '').strip()}`; total {results.get('duration_s', 0) / 60:.1f} min"
        + (" — **ABORTED: " + results["aborted"] + "**" if results.get("aborted") else ""),
    ]
    if results.get("skipped"):
        lines.append(
            f"- **Skipped to stay within the {results['args'].get('budget_minutes')}-minute budget:** "
            + "; ".join(results["skipped"])
        )
    lines += [
        "",
        "Benchmarks are not tests: nothing here is asserted. The machine is shared and noisy, so every claim is a "
        "ratio to a baseline measured in this same run. *Steady* = records / time inside the Spark jobs (kafka-s3) "
        "or from the first record to the last one durable (Quix: group offsets committed after the sink flushed / "
        "all records in the target topic). *Start* = Spark session start-up (kafka-s3) or time to the first record "
        "(Quix). *Other* = wall − start − steady (imports, planning, listing, JVM shutdown). *Limits* are the best "
        "of their samples (conservative ratios). Peak memory is the peak of the summed RSS of the whole process tree "
        "(driver, Spark JVM, Python workers), sampled every 0.2 s; PSS in brackets does not double-count pages "
        "shared by forked workers.",
        "",
    ]
    s3 = results.get("s3_limit")
    lines += ["## Limits", ""]
    lines += [
        "| limit | " + " | ".join(v["dataset"]["label"] for v in results.get("variants", [])) + " |",
        "|---|" + "--:|" * len(results.get("variants", [])),
    ]

    def limit_row(label, fn):
        return f"| {label} | " + " | ".join(fn(v) for v in results.get("variants", [])) + " |"

    def samples(key):
        def fn(v):
            rates = [s.get("records_per_s") for s in v["limits"].get(key) or [] if s]
            return " / ".join(_rate(r) for r in rates) + " rec/s" if rates else "n/a"

        return fn

    lines.append(limit_row("raw Python consume (samples: before / after)", samples("raw_consume")))
    lines.append(
        limit_row(
            "kcat consume",
            lambda v: (
                (_rate(v["limits"]["kcat"].get("records_per_s")) + " rec/s")
                if v["limits"].get("kcat") and v["limits"]["kcat"].get("records_per_s")
                else "n/a (kcat not installed)"
                if v["limits"].get("kcat") is None
                else "failed"
            ),
        )
    )
    lines.append(limit_row("raw Python produce (samples: before / after)", samples("raw_produce")))
    lines.append(
        limit_row(
            "dataset produce (same producer)", lambda v: _rate(v["dataset"]["produce"].get("records_per_s")) + " rec/s"
        )
    )
    lines.append(
        limit_row("payload (keys + values + headers)", lambda v: f"{v['dataset']['payload_bytes'] / 1e6:,.0f} MB")
    )
    lines.append("")
    if s3:
        for label in ("single stream", "10 threads"):
            if label in s3:
                lines.append(
                    f"S3 ({s3['objects']} × {s3['object_mib']} MiB multipart, boto3 {label}): put "
                    f"{s3[label]['put_mb_per_s']:,.0f} MB/s, get {s3[label]['get_mb_per_s']:,.0f} MB/s  "
                )
        lines.append("")

    for variant in results.get("variants", []):
        ds = variant["dataset"]
        lines += [f"## {ds['label']} ({ds['partitions']} partitions, {ds['payload_bytes'] / 1e6:,.0f} MB payload)", ""]
        lines.append(
            f"Limits used: raw consume {_rate(variant['limits'].get('raw_consume_best'))} rec/s, "
            f"raw produce {_rate(variant['limits'].get('raw_produce_best'))} rec/s. Backups compare with "
            "raw consume and Quix FileSink, restores with raw produce and Quix FileSource (JSON↔JSON, "
            "Parquet↔Parquet, otherwise the faster Quix format)."
        )
        lines += ["", RUN_HEADER]
        for fmt, run in variant.get("backups", {}).items():
            lines.append(_run_row(f"backup {FORMAT_LABELS[fmt]}", run))
        for fmt, modes in variant.get("restores", {}).items():
            for mode, run in modes.items():
                lines.append(_run_row(f"restore {FORMAT_LABELS[fmt]}, {MODE_LABELS[mode]}", run))
        for mode, runs in variant.get("peer", {}).items():
            for fmt, run in runs.items():
                name = "FileSink" if mode == "sink" else "FileSource"
                lines.append(_run_row(f"Quix {name} {'JSON' if fmt == 'json' else fmt.capitalize()}", run))
        if variant.get("peer_error"):
            lines.append(f"\nQuix Streams: {variant['peer_error']}")
        lines.append("")

    memory = results.get("memory_case")
    if memory:
        lines += [
            "## Memory case: 1,000 open files",
            "",
            f"`kafka-s3 backup --once` of {memory.get('dataset_label')} with the Field partitioner on "
            "`customer` (1,000 values in every partition), JSON, `flush.size` above the record count (every "
            "file stays open until the end), `s3.part.size=5242880`.",
            "",
            RUN_HEADER,
            _run_row("backup, Field partitioner", memory),
            "",
        ]
        if memory.get("peak_rss_breakdown"):
            lines.append(
                "At the peak: "
                + ", ".join(f"{k} {_mib(v)} MiB" for k, v in sorted(memory["peak_rss_breakdown"].items()))
                + f"; {memory.get('objects', 0):,} objects written."
            )
            lines.append("")
        if memory.get("vs_bytearray_backup_rss") is not None:
            lines.append(
                f"Compared with the ByteArray backup of the same topic (default partitioner, same run): "
                f"{memory['vs_bytearray_backup_rss'] / MiB:+,.0f} MiB RSS, "
                f"{memory['vs_bytearray_backup_pss'] / MiB:+,.0f} MiB PSS at the peak."
            )
            lines.append("")

    lines += [
        "## Targets (from the issue)",
        "",
        "Judged on steady-state ratios (the end-to-end ratios are in the tables above).",
        "",
        "| target | variant | measured | held |",
        "|---|---|---|---|",
    ]
    for t in results.get("targets", []):
        held = {True: "yes", False: "**no**", None: "n/a"}[t["held"]]
        lines.append(f"| {t['target']} | {t['variant']} | {t['measured']} | {held} |")
    lines.append("")

    phases = phase_summary(results)
    if phases:
        lines += [
            "## Where the time goes (kafka-s3 runs)",
            "",
            "| variant | runs | wall s | Spark start | inside jobs | other |",
            "|---|--:|--:|--:|--:|--:|",
        ]
        for row in phases:
            lines.append(
                f"| {row['variant']} | {row['runs']} | {row['wall']:,.0f} | {row['start']:.0%} | "
                f"{row['jobs']:.0%} | {row['other']:.0%} |"
            )
        lines.append("")

    failures = [(name, run) for name, run in all_runs(results) if run and not ok(run) and not run.get("skipped")]
    if failures:
        lines += ["## Failures", ""]
        for name, run in failures:
            lines += [
                f"**{name}** (exit {run.get('returncode')}, log `{run.get('log')}`):",
                "",
                "```",
                str(run.get("error") or run.get("incomplete") or "")[-2000:],
                "```",
                "",
            ]
    return "\n".join(lines).rstrip() + "\n"


def all_runs(results: dict):
    for variant in results.get("variants", []):
        label = variant["dataset"]["label"]
        for fmt, run in variant.get("backups", {}).items():
            yield f"{label} backup {fmt}", run
        for fmt, modes in variant.get("restores", {}).items():
            for mode, run in modes.items():
                yield f"{label} restore {fmt} {mode}", run
        for mode, runs in variant.get("peer", {}).items():
            for fmt, run in runs.items():
                yield f"{label} quix {mode} {fmt}", run
    if results.get("memory_case"):
        yield "memory case", results["memory_case"]


def phase_summary(results: dict) -> list[dict]:
    rows = []
    for variant in results.get("variants", []):
        runs = [r for _, modes in variant.get("restores", {}).items() for r in modes.values()]
        runs += list(variant.get("backups", {}).values())
        runs = [r for r in runs if ok(r) and r.get("spark_start_s") is not None]
        wall = sum(r["wall_s"] for r in runs)
        if not wall:
            continue
        start = sum(r["spark_start_s"] for r in runs)
        jobs = sum(r["job_s"] for r in runs)
        rows.append(
            {
                "variant": variant["dataset"]["label"],
                "runs": len(runs),
                "wall": wall,
                "start": start / wall,
                "jobs": jobs / wall,
                "other": max(0.0, wall - start - jobs) / wall,
            }
        )
    return rows
