"""Derived numbers (rates, ratios, targets) and the Markdown report of one benchmark run.

Every comparison is a ratio of two rates measured in the same run. The *rate* is what a user sees (as
docs/performance.md says): records / (wall of the command − wall of the same command on a 4-record topic of the same
shape), so planning, listing, commits and the workers' start count and only the fixed start-up is taken out.
*End-to-end* rates use the whole wall time of the process; *steady* rates count only the time inside the Spark jobs
(kafka-s3) or from the first record to the end (Quix).
"""

from __future__ import annotations

import itertools
from statistics import median

from common import MiB
from small_runs import medians as small_run_medians

FORMAT_LABELS = {
    "bytearray": "ByteArray",
    "json-gzip": "JSON+gzip",
    "avro-deflate": "Avro+deflate",
    "parquet-snappy": "Parquet+snappy",
    "envelope-avro": "Envelope (Avro+deflate)",
    "envelope-parquet": "Envelope (Parquet+snappy)",
    "envelope-json": "Envelope (JSON+gzip)",
}
MODE_LABELS = {"eos": "exactly-once", "alo": "at-least-once"}
# The peer's format compared with each kafka-s3 format (None: the faster of the peer's formats).
PEER_MATCH = {"json-gzip": "json", "parquet-snappy": "parquet"}
# The performance targets (docs/performance.md): every format (the envelope included), both restore modes, at 1 KiB
# and 100 B.
BACKUP_TARGET = 0.60  # × raw confluent-kafka consume
RESTORE_TARGET = 0.50  # × raw confluent-kafka produce
PEER_FACTOR = 3.0  # × Quix Streams FileSink / FileSource
MEMORY_LIMIT = 1024 * MiB  # peak RSS of the whole process tree, 1,000 open field partitions
SMALL_RUN_LIMIT_S = 5.0  # wall of a 4-record backup / restore
CURVE_LINEAR = 0.8  # rate at the largest record count ≥ this × the rate at the point before it
CURVE_PARTITIONS = 0.8  # rate at the most partitions ≥ this × the best rate over the partition counts


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
    return run["records"] / effective_wall(run)


def effective_wall(run: dict) -> float:
    """The wall time a rate uses: Quix until the work was done (not until its shutdown ended), kafka-s3 all of it."""
    return float(run.get("done_s") or run["wall_s"])


def rate(run: dict | None) -> float | None:
    """records / (wall − wall of the same command on the 4-record topic): n/a without a baseline, or when the
    difference is not positive (a run within the noise of the fixed start-up)."""
    if not ok(run) or not run.get("wall_s"):
        return None
    base = run.get("baseline") or {}
    if base.get("wall_s") is None:
        return None
    seconds = effective_wall(run) - base["wall_s"]
    return run["records"] / seconds if seconds > 0 else None


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
        kcat = kcat_rate(variant)
        variant["limits"]["raw_consume_best"] = consume
        variant["limits"]["raw_produce_best"] = produce
        for kind, table in (("backup", variant.get("backups", {})), ("restore", variant.get("restores", {}))):
            for fmt, entry in table.items():
                runs = entry.items() if kind == "restore" else [(None, entry)]
                for _mode, run in runs:
                    _rates(run, per_record_bytes)
                    limit = consume if kind == "backup" else produce
                    run["vs_limit_rate"] = ratio(run.get("rate"), limit)
                    run["vs_limit"] = ratio(run.get("steady_rate"), limit)
                    run["vs_limit_end_to_end"] = ratio(run.get("wall_rate"), limit)
                    peer_mode = "sink" if kind == "backup" else "source"
                    peer, peer_name = peer_rate(variant, peer_mode, fmt, rate)
                    peer_wall, _ = peer_rate(variant, peer_mode, fmt, wall_rate)
                    peer_steady, _ = peer_rate(variant, peer_mode, fmt)
                    run["vs_peer_rate"] = ratio(run.get("rate"), peer)
                    run["vs_peer"] = ratio(run.get("steady_rate"), peer_steady)
                    run["vs_peer_end_to_end"] = ratio(run.get("wall_rate"), peer_wall)
                    run["peer_compared"] = peer_name
                    run["vs_kcat"] = ratio(run.get("steady_rate"), kcat) if kind == "backup" else None
        for mode, mode_runs in variant.get("peer", {}).items():
            for run in mode_runs.values():
                _rates(run, per_record_bytes)
                limit = consume if mode == "sink" else produce
                run["vs_limit_rate"] = ratio(run.get("rate"), limit)
                run["vs_limit"] = ratio(run.get("steady_rate"), limit)
                run["vs_limit_end_to_end"] = ratio(run.get("wall_rate"), limit)
                run["vs_kcat"] = ratio(run.get("steady_rate"), kcat) if mode == "sink" else None
        targets.extend(_variant_targets(variant))
    for key in MEMORY_CASES:
        if results.get(key):
            targets.append(_memory_target(results, results[key]))
    for base in results.get("baselines", []):
        for run in [base.get("backup"), *(base.get("restores") or {}).values()]:
            if run:
                run["rate"] = None  # a baseline has no rate of its own
    small = small_run_target(results.get("baselines", []))
    if small:
        targets.append(small)
    for point in [*results.get("curve", {}).get("records", []), *results.get("curve", {}).get("partitions", [])]:
        for runs in point.get("runs", {}).values():
            for run in [runs.get("backup"), *(runs.get("restores") or {}).values()]:
                if run:
                    _rates(run, point["payload_bytes"] / point["records"])
    sa = results.get("standalone") or {}
    for run in [sa.get("backup"), *(sa.get("restores") or {}).values()]:
        if run:
            run["rate"] = rate(run)
            run["wall_rate"] = wall_rate(run)
    targets.extend(curve_targets(results))
    targets += [connect_target(results), lookup_target(results)]
    targets.sort(key=lambda t: t["target"][:2])
    results["targets"] = targets


# The memory case with the defaults, and again with the settings a user bounds a worker's memory by (--memory-settings).
MEMORY_CASES = ("memory_case", "memory_case_bounded")


def _memory_target(results: dict, memory: dict) -> dict:
    """Target 3 for one memory case (rates and the difference to the same run's ByteArray backup added in place)."""
    main = next(
        (v for v in results.get("variants", []) if v["dataset"]["label"] in memory.get("dataset_label", "")), None
    )
    if main:
        _rates(memory, main["dataset"]["payload_bytes"] / main["dataset"]["records"])
        baseline = main.get("backups", {}).get("bytearray")
        if ok(baseline) and ok(memory):
            memory["vs_bytearray_backup_rss"] = memory["peak_rss"] - baseline["peak_rss"]
            memory["vs_bytearray_backup_pss"] = memory["peak_pss"] - baseline["peak_pss"]
    settings = memory.get("settings")
    return {
        "target": "3. Peak RSS of the process tree, 1,000 open field partitions, s3.part.size=5 MiB, "
        f"< 1 GiB ({results.get('services', {}).get('kafka_kind', 'broker not recorded')}"
        + (", " + _settings_label(settings) if settings else ", defaults")
        + ")",
        "variant": memory.get("dataset_label", ""),
        "measured": f"{memory['peak_rss'] / MiB:,.0f} MiB (PSS {memory.get('peak_pss', 0) / MiB:,.0f} MiB)"
        if ok(memory)
        else "skipped (time budget)"
        if memory.get("skipped")
        else "failed",
        "held": memory["peak_rss"] < MEMORY_LIMIT if ok(memory) else None,
    }


def _settings_label(settings: dict[str, str]) -> str:
    return ", ".join(f"`{k}={v}`" for k, v in settings.items())


def _rates(run: dict, per_record_bytes: float) -> None:
    run["rate"] = rate(run)
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
    """Targets 1 and 2 for one variant: every format, both restore modes, judged on the rate (wall minus
    the 4-record wall); the end-to-end ratio is shown beside each."""
    out = []
    backups = variant.get("backups", {})
    restores = variant.get("restores", {})

    def item(name: str, run: dict, key: str) -> tuple[str, float | None]:
        e2e = run.get(key.replace("_rate", "_end_to_end"))
        return f"{name} (end-to-end {_x(e2e)})", run.get(key)

    if backups:
        out.append(
            _judge(
                f"1. Backup ≥ {BACKUP_TARGET:.1f}× raw consume (rate), every format",
                variant,
                [item(FORMAT_LABELS[f], r, "vs_limit_rate") for f, r in backups.items()],
                BACKUP_TARGET,
                "×",
            )
        )
    if restores:
        out.append(
            _judge(
                f"1. Restore ≥ {RESTORE_TARGET:.1f}× raw produce (rate), every format and mode",
                variant,
                [
                    item(f"{FORMAT_LABELS[f]} {MODE_LABELS[m]}", r, "vs_limit_rate")
                    for f, modes in restores.items()
                    for m, r in modes.items()
                ],
                RESTORE_TARGET,
                "×",
            )
        )
    if backups and variant.get("peer", {}).get("sink"):
        out.append(
            _judge(
                f"2. Backup ≥ {PEER_FACTOR:.0f}× Quix Streams FileSink (rate)",
                variant,
                [item(FORMAT_LABELS[f], r, "vs_peer_rate") for f, r in backups.items()],
                PEER_FACTOR,
                "×",
            )
        )
    if restores and variant.get("peer", {}).get("source"):
        out.append(
            _judge(
                f"2. Restore ≥ {PEER_FACTOR:.0f}× Quix Streams FileSource (rate)",
                variant,
                [
                    item(f"{FORMAT_LABELS[f]} {MODE_LABELS[m]}", r, "vs_peer_rate")
                    for f, modes in restores.items()
                    for m, r in modes.items()
                ],
                PEER_FACTOR,
                "×",
            )
        )
    return out


def small_run_target(baselines: list[dict]) -> dict | None:
    """Target 4: every 4-record backup and restore on ``local[*]`` under ``SMALL_RUN_LIMIT_S`` wall."""
    walls = []
    for base in baselines:
        if base.get("master", "local[*]") != "local[*]":
            continue
        label = f"{FORMAT_LABELS.get(base['format'], base['format'])} p{base['partitions']}"
        walls.append((f"backup {label}", base.get("backup")))
        walls += [(f"restore {label} {MODE_LABELS.get(m, m)}", r) for m, r in (base.get("restores") or {}).items()]
    measured = [(name, run["wall_s"]) for name, run in walls if ok(run)]
    if not walls:
        return None
    failed = [name for name, run in walls if not ok(run)]
    slowest = max(measured, key=lambda x: x[1]) if measured else None
    held = None if failed and not measured else all(w < SMALL_RUN_LIMIT_S for _, w in measured) and not failed
    text = (
        f"{len(measured)} runs, walls {min(w for _, w in measured):.1f}–{slowest[1]:.1f} s (slowest: {slowest[0]})"
        if slowest
        else "n/a"
    )
    if failed:
        text += "; failed or skipped: " + ", ".join(failed)
    return {
        "target": f"4. 4-record backup and restore each < {SMALL_RUN_LIMIT_S:.0f} s wall (local[*], services up)",
        "variant": "4 records",
        "measured": text,
        "held": held,
    }


def curve_targets(results: dict) -> list[dict]:
    """Target 6: time linear in records (the rate holds at the largest record count) and adding partitions does not
    collapse the rate; the standalone cluster beside local[*] is reported (no threshold)."""
    import curve  # plot data lives beside the plot

    out = []
    for axis, measure in itertools.product(curve.AXES, curve.MEASURES):
        series = axis.series(results, measure.of)
        if series:
            out.append(
                _judge(
                    f"6. {measure.target} {axis.target.format(axis.threshold)}",
                    {"dataset": {"label": axis.label(results)}},
                    [(label + axis.at.format(pts[-1][0]), axis.judge(pts)) for label, pts in series.items()],
                    axis.threshold,
                    "×",
                )
            )
    sa = results.get("standalone")
    if sa:
        local = next(
            (v for v in results.get("variants", []) if v["dataset"]["label"] == sa.get("dataset")),
            None,
        )
        pairs = standalone_pairs(sa, local)
        text = "; ".join(
            f"{name}: standalone {_rate(s_rate)} vs local[*] {_rate(l_rate)} rec/s ({_x(ratio(s_rate, l_rate))})"
            for name, s_rate, l_rate in pairs
        )
        out.append(
            {
                "target": "6. One run on a standalone cluster (master + 2 workers) beside local[*] (reported)",
                "variant": f"{sa.get('dataset')} ({sa.get('partitions')} partitions)",
                "measured": text or ("skipped (time budget)" if sa.get("skipped") else sa.get("error") or "n/a"),
                "held": None,
            }
        )
    return out


def standalone_pairs(sa: dict, local: dict | None) -> list[tuple[str, float | None, float | None]]:
    """(run, standalone rate, local[*] rate) for the standalone case and its local twin of the main table."""
    fmt = sa.get("format", "")
    pairs = []
    if sa.get("backup"):
        twin = (local or {}).get("backups", {}).get(fmt)
        pairs.append((f"backup {FORMAT_LABELS.get(fmt, fmt)}", rate(sa["backup"]), rate(twin)))
    for mode, run in (sa.get("restores") or {}).items():
        twin = (local or {}).get("restores", {}).get(fmt, {}).get(mode)
        pairs.append((f"restore {FORMAT_LABELS.get(fmt, fmt)} {MODE_LABELS.get(mode, mode)}", rate(run), rate(twin)))
    return pairs


LOOKUP = "lookup, bounded by assign/startingOffsets/endingOffsets"
FULL_SCAN = "lookup, where over a full scan"


def connect_medians(connect: dict) -> dict[str, dict[str, dict[str, float]]]:
    """The small runs' medians (wall, session, job, load) per mode (``local``, ``remote``) and command."""
    return {
        mode: {kind: small_run_medians(runs, kind) for kind in ("backup", "restore")}
        for mode, runs in (connect.get("runs") or {}).items()
        if runs
    }


def connect_target(results: dict) -> dict:
    """Target 4 through Spark Connect: the median wall of a 4-record backup and of its restore (the first run of the
    server's session, which starts its Python workers, is not counted) under ``SMALL_RUN_LIMIT_S``."""
    connect = results.get("connect")
    target = {
        "target": f"4. The same small runs over Spark Connect (`--remote sc://…`) < {SMALL_RUN_LIMIT_S:.0f} s (median)",
        "variant": "4 records, 1 partition, JSON",
        "held": None,
    }
    if connect is None:
        return {**target, "measured": "not run (--connect-rounds 0)"}
    medians = connect_medians(connect)
    if "remote" not in medians:
        target["measured"] = "skipped (time budget)" if connect.get("skipped") else f"failed: {connect.get('error')}"
        return target
    remote = {kind: m["wall"] for kind, m in medians["remote"].items()}
    local = {kind: m["wall"] for kind, m in medians.get("local", {}).items()}
    walls = [r[kind]["wall"] for r in connect["runs"]["remote"] for kind in ("backup", "restore")]
    target["measured"] = (
        f"{connect.get('rounds')} round(s): backup {remote['backup']:.1f} s, restore {remote['restore']:.1f} s "
        f"(all {min(walls):.1f}–{max(walls):.1f} s); local[*] in the same rounds: backup "
        f"{_n(local.get('backup'))} s, restore {_n(local.get('restore'))} s"
    )
    target["held"] = max(remote.values()) < SMALL_RUN_LIMIT_S
    return target


def lookup_medians(lookups: dict) -> dict[str, float]:
    return {case: median(samples) for case, samples in (lookups.get("times_s") or {}).items() if samples}


def lookup_target(results: dict) -> dict:
    """Target 5: a point lookup bounded by the reader's options beside the same query as a ``where`` over a full
    scan (reported: the time beside the scan's, and that planning reads only the objects that can hold the offsets)."""
    lookups = results.get("lookups")
    target = {
        "target": "5. Point lookups: bounded by the reader's offset options vs a where over a full scan (reported)",
        "variant": "",
        "held": None,
    }
    if lookups is None:
        return {**target, "measured": "not run (--lookup-records 0)"}
    medians = lookup_medians(lookups)
    if LOOKUP not in medians or FULL_SCAN not in medians:
        target["measured"] = "skipped (time budget)" if lookups.get("skipped") else f"failed: {lookups.get('error')}"
        return target
    planned = lookups.get("spark_partitions", {})
    target["variant"] = (
        f"{lookups['records']:,} × {lookups['value_size']} B, {lookups['objects']} objects, "
        "ten offsets of one partition"
    )
    target["measured"] = (
        f"bounded {medians[LOOKUP]:.2f} s ({planned.get(LOOKUP, '?')} Spark partition(s)) vs full scan "
        f"{medians[FULL_SCAN]:.2f} s ({planned.get(FULL_SCAN, '?')}): {_x(ratio(medians[LOOKUP], medians[FULL_SCAN]))}"
    )
    return target


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
        return f"| {label} | {'skipped (' + run['skipped'] + ')' if run else 'not run'} |" + " |" * 12
    status = (
        ""
        if ok(run)
        else (" ⚠ timed out" if run.get("timed_out") else " ⚠ failed" if run.get("error") else " ⚠ incomplete")
    )
    start = run.get("spark_start_s") if run.get("spark_start_s") is not None else run.get("startup_s")
    base = (run.get("baseline") or {}).get("wall_s")
    return (
        f"| {label}{status} | {_n(run.get('records'))} | {_n(run.get('wall_s'))} | {_n(base)} | {_n(start)} | "
        f"{_n(run.get('job_s'))} | {_n(run.get('other_s'))} | **{_rate(run.get('rate'))}** | "
        f"{_rate(run.get('wall_rate'))} | {_rate(run.get('steady_rate'))} | "
        f"{_mib(run.get('peak_rss'))} ({_mib(run.get('peak_pss'))}) | "
        f"**{_x(run.get('vs_limit_rate'))}** ({_x(run.get('vs_limit_end_to_end'))}; {_x(run.get('vs_limit'))}) | "
        f"**{_x(run.get('vs_peer_rate'))}** ({_x(run.get('vs_peer_end_to_end'))}; {_x(run.get('vs_peer'))}) | "
        f"{'–' if run.get('kind') in ('restore', 'quix source') else _x(run.get('vs_kcat'))} |"
    )


RUN_HEADER = (
    "| run | records | wall s | 4-record wall s | start s | steady s | other s | rate rec/s | end-to-end rec/s | "
    "steady rec/s | peak RSS MiB (PSS) | vs limit: rate (end-to-end; steady) | vs Quix: rate (end-to-end; steady) | "
    "steady ÷ kcat |\n"
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
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
    warm = results.get("warm_up")
    if warm:
        lines.append(
            f"- Warm-up, not counted: a {warm['dataset']} backup ({FORMAT_LABELS.get(warm['format'], warm['format'])}) "
            f"before the timed runs, wall {_n(warm.get('wall_s'))} s"
        )
    if results.get("skipped"):
        lines.append(
            f"- **Skipped to stay within the {results['args'].get('budget_minutes')}-minute budget:** "
            + "; ".join(results["skipped"])
        )
    lines += [
        "",
        "Benchmarks are not tests: nothing here is asserted. The machine is shared and noisy, so every claim is a "
        "ratio to a baseline measured in this same run. **Rate** = records / (wall − wall of the same "
        "command on a 4-record topic of the same shape): planning, listing, commits and worker start count, only the "
        "fixed start-up is taken out. *End-to-end* = records / wall. "
        "*Steady* = records / time inside the Spark jobs (kafka-s3) "
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
                else "n/a (not measured)"
                if "kcat" not in v["limits"]
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
        lines += _ceiling_lines(results, variant)
        lines.append("")

    lines += _memory_section(results)

    lines += [
        "## Targets",
        "",
        "Every performance target (docs/performance.md). Ratios are judged on the rate (wall − 4-record wall); the "
        f"plain end-to-end ratio is beside each. Broker: {results.get('services', {}).get('kafka', 'n/a')}.",
        "",
        "| target | variant | measured | held |",
        "|---|---|---|---|",
    ]
    for t in results.get("targets", []):
        held = {True: "yes", False: "**no**", None: "n/a"}[t["held"]]
        lines.append(f"| {t['target']} | {t['variant']} | {t['measured']} | {held} |")
    lines.append("")

    lines += _performance_iii_section(results)
    lines += _small_runs_section(results)
    lines += _curve_section(results)
    lines += _standalone_section(results)
    lines += _connect_section(results)
    lines += _lookups_section(results)
    lines += _compaction_section(results)
    lines += _partitions_section(results)
    lines += _follow_section(results)

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


def _memory_section(results: dict) -> list[str]:
    cases = [results[key] for key in MEMORY_CASES if results.get(key)]
    if not cases:
        return []
    lines = [
        "## Memory case: 1,000 open files",
        "",
        f"`kafka-s3 backup --once` of {cases[0].get('dataset_label')} with the Field partitioner on "
        "`customer` (1,000 values in every partition), JSON, `flush.size` above the record count (every "
        "file stays open until the end), `s3.part.size=5242880`; with the defaults, and with the settings that bound "
        "a worker's memory (`--memory-settings`).",
        "",
        RUN_HEADER,
    ]
    lines += [
        _run_row(
            "backup, Field partitioner" + (", " + _settings_label(m["settings"]) if m.get("settings") else ""),
            m,
        )
        for m in cases
    ]
    lines.append("")
    for memory in cases:
        label = "with the settings" if memory.get("settings") else "with the defaults"
        if memory.get("peak_rss_breakdown"):
            lines.append(
                f"At the peak ({label}): "
                + ", ".join(f"{k} {_mib(v)} MiB" for k, v in sorted(memory["peak_rss_breakdown"].items()))
                + f"; {memory.get('objects', 0):,} objects written."
            )
            lines.append("")
        if memory.get("vs_bytearray_backup_rss") is not None:
            lines.append(
                f"Compared with the ByteArray backup of the same topic ({label}; default partitioner, same run): "
                f"{memory['vs_bytearray_backup_rss'] / MiB:+,.0f} MiB RSS, "
                f"{memory['vs_bytearray_backup_pss'] / MiB:+,.0f} MiB PSS at the peak."
            )
            lines.append("")
    return lines


def _small_runs_section(results: dict) -> list[str]:
    baselines = results.get("baselines") or []
    if not baselines:
        return []
    modes = sorted({m for b in baselines for m in (b.get("restores") or {})})
    lines = [
        "## Small runs: the 4-record baselines",
        "",
        "The same commands on a 4-record topic of the same shape; their walls are what the rates subtract.",
        "",
        "| dataset | format | partitions | master | backup wall s | "
        + " | ".join(f"restore {MODE_LABELS.get(m, m)} wall s" for m in modes)
        + " |",
        "|---|---|--:|---|--:|" + "--:|" * len(modes),
    ]
    for b in baselines:
        cells = [_wall(b.get("backup"))] + [_wall((b.get("restores") or {}).get(m)) for m in modes]
        lines.append(
            f"| {b.get('dataset', '')} | {FORMAT_LABELS.get(b['format'], b['format'])} | {b['partitions']} | "
            f"{b.get('master')} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def _wall(run: dict | None) -> str:
    if not run:
        return "–"
    return _n(run.get("wall_s")) if ok(run) else "failed" if not run.get("skipped") else "skipped"


def _curve_section(results: dict) -> list[str]:
    import curve

    data = results.get("curve") or {}
    if not data.get("records") and not data.get("partitions"):
        return []
    lines = ["## Scale curve", ""]
    if results.get("curve_png"):
        lines += [f"![rate vs records and partitions]({results['curve_png']})", ""]
    for axis, measure in itertools.product(curve.AXES, curve.MEASURES):
        points = data.get(axis.key) or []
        if not points:
            continue
        xs = [p[axis.key] for p in sorted(points, key=lambda p: p[axis.key])]
        lines += [
            f"{measure.name} (rec/s, {measure.meaning}) vs {axis.key}: {axis.label(results)}. "
            f"In brackets: {measure.bracket}, s.",
            "",
            f"| run | {' | '.join(f'{x:,}' for x in xs)} | {axis.judged_as} |",
            "|---|" + "--:|" * (len(xs) + 1),
        ]
        walls = _curve_walls(points, axis.key, measure.seconds)
        for label, pts in axis.series(results, measure.of).items():
            by_x = dict(pts)
            cells = [f"{_rate(by_x.get(x))} ({_n(walls.get((label, x)))})" for x in xs]
            lines.append(f"| {label} | {' | '.join(cells)} | {_x(axis.judge(pts))} |")
        lines.append("")
    return lines


def _curve_walls(points: list[dict], key: str, seconds: str) -> dict[tuple[str, int], float]:
    """(label, x) -> the run's ``seconds`` (its wall, or its time inside the jobs)."""
    walls = {}
    for point in points:
        for fmt, runs in point.get("runs", {}).items():
            name = FORMAT_LABELS.get(fmt, fmt)
            if ok(runs.get("backup")):
                walls[(f"backup {name}", point[key])] = runs["backup"].get(seconds)
            for mode, run in (runs.get("restores") or {}).items():
                if ok(run):
                    walls[(f"restore {name} {MODE_LABELS.get(mode, mode)}", point[key])] = run.get(seconds)
    return walls


def _standalone_section(results: dict) -> list[str]:
    sa = results.get("standalone")
    if not sa:
        return []
    lines = ["## Standalone cluster beside local[*]", ""]
    if sa.get("skipped") or sa.get("error"):
        return [*lines, f"Not run: {sa.get('skipped') or sa.get('error')}", ""]
    local = next((v for v in results.get("variants", []) if v["dataset"]["label"] == sa.get("dataset")), None)
    lines += [
        f"{sa.get('dataset')}, {sa.get('partitions')} partitions, on `{sa.get('master')}` ({sa.get('workers')} workers "
        f"× {sa.get('worker_cores')} core on this machine, started by the bench) and on `local[*]` (the main table).",
        "",
        "| run | standalone rate rec/s | local[*] rate rec/s | standalone ÷ local | standalone wall s (4-record) "
        "| local[*] wall s (4-record) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    fmt = sa.get("format", "")
    twins = [("backup", sa.get("backup"), (local or {}).get("backups", {}).get(fmt))]
    twins += [
        (f"restore {MODE_LABELS.get(m, m)}", r, (local or {}).get("restores", {}).get(fmt, {}).get(m))
        for m, r in (sa.get("restores") or {}).items()
    ]
    for name, s_run, l_run in twins:
        lines.append(
            f"| {name} {FORMAT_LABELS.get(fmt, fmt)} | {_rate(rate(s_run))} | {_rate(rate(l_run))} | "
            f"{_x(ratio(rate(s_run), rate(l_run)))} | {_wall_pair(s_run)} | {_wall_pair(l_run)} |"
        )
    return [*lines, ""]


def _connect_section(results: dict) -> list[str]:
    connect = results.get("connect") or {}
    if not connect.get("runs"):
        return []
    lines = [
        "## Small runs over Spark Connect",
        "",
        f"A 4-record JSON backup (`--once`) and its restore as CLI subprocesses, {connect.get('rounds')} round(s) "
        f"alternating `{connect.get('master')}` and `--remote {connect.get('remote')}` (a Connect server of the "
        f"bench's own, up in {_n(connect.get('server_start_s'))} s; its session's first run, which starts the "
        "server's Python workers, not counted). Medians; session = Spark session start, job = time inside the job.",
        "",
        "| mode | command | wall s | session s | job s | walls s |",
        "|---|---|--:|--:|--:|---|",
    ]
    for mode, by_kind in connect_medians(connect).items():
        for kind, middle in by_kind.items():
            samples = [r[kind] for r in connect["runs"][mode]]
            name = "--remote" if mode == "remote" else connect.get("master", mode)
            lines.append(
                f"| `{name}` | {kind} | {middle['wall']:.1f} | {middle['session']:.1f} | {middle['job']:.1f} | "
                + ", ".join(f"{x['wall']:.1f}" for x in samples)
                + " |"
            )
    return [*lines, ""]


def _lookups_section(results: dict) -> list[str]:
    lookups = results.get("lookups") or {}
    medians = lookup_medians(lookups)
    if FULL_SCAN not in medians:
        return []
    lines = [
        "## Point lookups",
        "",
        f'`spark.read.format("kafka-s3")` on a backup of {lookups["records"]:,} records × {lookups["value_size"]} '
        f"B ({lookups['format']}, {lookups['flush_size']:,} records per object, {lookups['objects']} objects): "
        f"`{lookups['condition']}` bounded by `assign`/`startingOffsets`/`endingOffsets`, the same query as a `where` "
        "over a full scan, the whole backup, and "
        "`kafka-s3 read` (no Spark). One Spark session, each case warmed up once, then timed in turn; medians.",
        "",
        "| case | rows | Spark partitions | median s | × full scan |",
        "|---|--:|--:|--:|--:|",
    ]
    planned = lookups.get("spark_partitions", {})
    for case, seconds in medians.items():
        lines.append(
            f"| {case} | {lookups['rows'][case]:,} | {planned.get(case, '–')} | {seconds:.2f} | "
            f"{_x(ratio(seconds, medians[FULL_SCAN]))} |"
        )
    return [*lines, ""]


def _compaction_section(results: dict) -> list[str]:
    """``bench/compaction.py``'s measurements (:func:`compaction.render` writes the same table on its own)."""
    found = results.get("compaction") or {}
    if "compact" not in found:
        return []
    import compaction

    return ["#" + line if line.startswith("# ") else line for line in compaction.render(found).splitlines()] + [""]


def _partitions_section(results: dict) -> list[str]:
    """``bench/partitions.py``'s measurements (:func:`partitions.render` writes the same tables on its own)."""
    found = results.get("partitions") or {}
    if "points" not in found:
        return []
    import partitions

    return ["#" + line if line.startswith("# ") else line for line in partitions.render(found).splitlines()] + [""]


def _follow_section(results: dict) -> list[str]:
    """``bench/follow.py``'s measurements (:func:`follow.render` writes the same tables on its own)."""
    found = results.get("follow") or {}
    if "latency" not in found and "idle" not in found:
        return []
    import follow

    return ["#" + line if line.startswith("# ") else line for line in follow.render(found).splitlines()] + [""]


def _wall_pair(run: dict | None) -> str:
    if run is None or not ok(run):
        return "n/a"
    return f"{_n(run.get('wall_s'))} ({_n((run.get('baseline') or {}).get('wall_s'))})"


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
    for key in MEMORY_CASES:
        if results.get(key):
            yield key.replace("_", " "), results[key]
    for base in results.get("baselines", []):
        name = f"4-record baseline {base['format']} p{base['partitions']} {base.get('master')}"
        yield f"{name} backup", base.get("backup")
        for mode, run in (base.get("restores") or {}).items():
            yield f"{name} restore {mode}", run
    for key in ("records", "partitions"):
        for point in results.get("curve", {}).get(key, []):
            for fmt, runs in point.get("runs", {}).items():
                name = f"curve {point['records']:,} records, {point['partitions']} partitions, {fmt}"
                yield f"{name} backup", runs.get("backup")
                for mode, run in (runs.get("restores") or {}).items():
                    yield f"{name} restore {mode}", run
    sa = results.get("standalone") or {}
    if sa.get("backup"):
        yield "standalone backup", sa["backup"]
    for mode, run in (sa.get("restores") or {}).items():
        yield f"standalone restore {mode}", run


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


# ---------------------------------------------------------------------------------------------------- issue 30
PARTITIONS_BACKUP_LIMIT_S = 15.0  # one backup cycle of 1,000 partitions × 10 records, wall
PARTITIONS_RESTORE_LIMIT_S = 20.0  # its restore, wall
PARTITION_OVERHEAD_LIMIT_S = 0.010  # per partition (the walls' slope over the partition count)
PARTITIONS_RATE = 0.8  # rate at 1,000 × 1,000 ≥ this × the rate of the same records from 4 partitions
EXACT_RESTORE_TARGET = 0.5  # envelope restores, exactly-once, × raw produce
FOLLOW_IDLE_WALL_S = 0.5  # one idle follow cycle
FOLLOW_IDLE_CPU_S = 0.2
KCAT_STRETCH = 0.5  # ByteArray / Parquet backups' steady rate × kcat's consume rate
KCAT_STRETCH_FORMATS = ("bytearray", "parquet-snappy")
NOT_MEASURED = "not measured"


def kcat_rate(variant: dict) -> float | None:
    kcat = variant.get("limits", {}).get("kcat") or {}
    return kcat.get("records_per_s")


def s3_put_ceiling(results: dict) -> tuple[float | None, str]:
    """The best S3 multipart put of the run (MB/s) and which client setting gave it."""
    s3 = results.get("s3_limit") or {}
    puts = [(v["put_mb_per_s"], k) for k, v in s3.items() if isinstance(v, dict) and v.get("put_mb_per_s")]
    return max(puts) if puts else (None, "")


def stored_mb_s(run: dict) -> float | None:
    """MB stored per second inside the job (what the S3 server had to accept)."""
    if not ok(run) or not run.get("job_s") or not run.get("stored_mb"):
        return None
    return float(run["stored_mb"]) / float(run["job_s"])


SHOWN = "shown"  # a part of a target's text that is context, not judged


def _verdict(parts: list[tuple[str, bool | str | None]]) -> tuple[str, bool | None]:
    """Several checks of one target: their texts joined; held when all judged ones hold, not held when one fails,
    n/a when one could not be measured."""
    text = "; ".join(t for t, _ in parts)
    verdicts = [h for _, h in parts if h != SHOWN]
    if any(h is False for h in verdicts):
        return text, False
    return text, (True if verdicts and all(h is True for h in verdicts) else None)


def _mark(held: bool | None) -> str:
    return " ✓" if held is True else " ✗" if held is False else ""


def _partitions_iii(results: dict) -> tuple[str, bool | None]:
    found = results.get("partitions") or {}
    if "points" not in found:
        return NOT_MEASURED, None
    import partitions

    parts: list[tuple[str, bool | str | None]] = []
    point = next(
        (p for p in found["points"] if p["partitions"] == 1000 and p.get("records_per_partition") == 10),
        None,
    )
    for kind, limit in (("backup", PARTITIONS_BACKUP_LIMIT_S), ("restore", PARTITIONS_RESTORE_LIMIT_S)):
        run = (point or {}).get(kind)
        if run and run.get("returncode") == 0:
            held = run["wall_s"] < limit
            parts.append((f"1,000 × 10 {kind} {run['wall_s']:.1f} s (< {limit:.0f} s){_mark(held)}", held))
        else:
            parts.append((f"1,000 × 10 {kind} {NOT_MEASURED if run is None else 'failed'}", None))
    slopes = [r for r in partitions.overheads(found) if r["records_per_partition"] == 10]
    for row in slopes:
        if row["kind"] == "backup":
            held = row["wall_s_per_partition"] < PARTITION_OVERHEAD_LIMIT_S
            parts.append((f"backup {row['wall_s_per_partition'] * 1000:.1f} ms per partition{_mark(held)}", held))
        else:
            parts.append((f"{row['kind']} {row['wall_s_per_partition'] * 1000:.1f} ms per partition", SHOWN))
    if not slopes:
        parts.append((f"ms per partition {NOT_MEASURED}", None))
    pairs = []
    for base in found.get("baselines", []):
        many = max(
            (p for p in found["points"] if p.get("records_per_partition") == base.get("beside")),
            key=lambda p: p["partitions"],
            default=None,
        )
        wide, narrow = (many or {}).get("backup"), base.get("backup")
        if wide and narrow and wide.get("returncode") == 0 and narrow.get("returncode") == 0:
            pairs.append((many["partitions"], base["beside"], narrow["wall_s"] / wide["wall_s"]))
    wanted = [p for p in pairs if p[0] == 1000 and p[1] == 1000]
    if wanted:
        held = wanted[0][2] >= PARTITIONS_RATE
        parts.append((f"rate at 1,000 × 1,000 ÷ 4 partitions {wanted[0][2]:.2f}×{_mark(held)}", held))
    else:
        shown = ", ".join(f"{n:,} × {r:,}: {x:.2f}×" for n, r, x in pairs)
        parts.append((f"rate at 1,000 × 1,000 ÷ 4 partitions {NOT_MEASURED}" + (f" ({shown})" if shown else ""), None))
    return _verdict(parts)


def _small_runs_iii(results: dict) -> tuple[str, bool | None]:
    """The user's Spark server started by the CLI (bench/small_runs.py's server mode): the commands after the first."""
    server = (results.get("small_runs") or {}).get("server") or (results.get("connect") or {}).get("server")
    if not server or not server.get("warm"):
        return NOT_MEASURED, None
    walls = {kind: median(r[kind]["wall"] for r in server["warm"]) for kind in ("backup", "restore")}
    parts: list[tuple[str, bool | str | None]] = [
        (f"{kind} {wall:.1f} s from the second command on{_mark(wall < SMALL_RUN_LIMIT_S)}", wall < SMALL_RUN_LIMIT_S)
        for kind, wall in walls.items()
    ]
    if server.get("cold"):
        parts.append((f"first command {median(r['backup']['wall'] for r in server['cold']):.1f} s", SHOWN))
    return _verdict(parts)


def _memory_iii(results: dict) -> tuple[str, bool | None]:
    memory = results.get("memory_case")
    if not memory or memory.get("skipped"):
        return NOT_MEASURED, None
    if not ok(memory):
        return "failed", None
    kinds = ", ".join(f"{k} {_mib(v)}" for k, v in sorted((memory.get("peak_rss_breakdown") or {}).items()))
    held = memory["peak_rss"] < MEMORY_LIMIT
    return f"{_mib(memory['peak_rss'])} MiB with the defaults ({kinds}){_mark(held)}", held


def _exact_iii(results: dict) -> tuple[str, bool | None]:
    parts: list[tuple[str, bool | str | None]] = []
    for variant in results.get("variants", []):
        size = variant["dataset"]["label"].split(" × ")[-1]
        for fmt in ("envelope-avro", "envelope-json"):
            run = (variant.get("restores", {}).get(fmt) or {}).get("eos")
            value = (run or {}).get("vs_limit_rate")
            held = None if value is None else value >= EXACT_RESTORE_TARGET
            if run is not None:
                parts.append((f"{size} {FORMAT_LABELS[fmt]} restore {_x(value)} raw produce{_mark(held)}", held))
        for fmt in ("envelope-avro", "envelope-parquet", "envelope-json"):
            run = variant.get("backups", {}).get(fmt)
            value = (run or {}).get("vs_peer_rate")
            held = None if value is None else value >= PEER_FACTOR
            if run is not None:
                parts.append((f"{size} {FORMAT_LABELS[fmt]} backup {_x(value)} Quix{_mark(held)}", held))
    return _verdict(parts) if parts else (NOT_MEASURED, None)


def _follow_iii(results: dict) -> tuple[str, bool | None]:
    follow = results.get("follow") or {}
    p99 = ((follow.get("latency") or {}).get("durable") or {}).get("p99")
    idle = follow.get("idle") or {}
    if p99 is None and not idle:
        return NOT_MEASURED if not follow.get("error") else f"failed: {follow['error']}", None
    parts: list[tuple[str, bool | str | None]] = []
    if p99 is not None and follow.get("target_s") is not None:
        held = p99 <= follow["target_s"]
        parts.append((f"p99 produce → durable {p99:.1f} s (≤ {follow['target_s']:.0f} s){_mark(held)}", held))
    elif (follow.get("latency") or {}).get("durable"):  # measured, but the 99th percentile was not durable yet
        parts.append(("p99 produce → durable: not durable within the drain wait" + _mark(False), False))
    else:
        parts.append((f"p99 produce → durable {NOT_MEASURED}", None))
    if idle.get("wall_s") is not None:
        held = idle["wall_s"] < FOLLOW_IDLE_WALL_S and idle.get("cpu_s", float("inf")) < FOLLOW_IDLE_CPU_S
        parts.append((f"idle cycle {idle['wall_s']:.2f} s wall, {idle.get('cpu_s', 0):.2f} CPU-s{_mark(held)}", held))
    else:
        parts.append((f"idle cycle {NOT_MEASURED}", None))
    return _verdict(parts)


def _kcat_iii(results: dict) -> tuple[str, bool | None]:
    parts: list[tuple[str, bool | str | None]] = []
    ceiling, client = s3_put_ceiling(results)
    for variant in results.get("variants", []):
        if not kcat_rate(variant):
            continue
        size = variant["dataset"]["label"].split(" × ")[-1]
        ratios = [(fmt, run.get("vs_kcat")) for fmt, run in variant.get("backups", {}).items() if ok(run)]
        rest = ", ".join(f"{FORMAT_LABELS[f]} {_x(v)}" for f, v in ratios if f not in KCAT_STRETCH_FORMATS)
        for fmt, value in ratios:
            if fmt in KCAT_STRETCH_FORMATS and value is not None:
                run = variant["backups"][fmt]
                allowed, note = _kcat_allowed(run, kcat_rate(variant) or 0.0, ceiling)
                held = value >= allowed
                parts.append((f"{size} {FORMAT_LABELS[fmt]} {_x(value)}{note}{_mark(held)}", held))
        if rest:
            parts.append((f"{size} others {rest}", SHOWN))
    if not parts:
        return NOT_MEASURED, None
    text, held = _verdict(parts)
    if ceiling:
        text += f"; S3 put ceiling {ceiling:,.0f} MB/s ({client})"
    return text, held


def _ceiling_lines(results: dict, variant: dict) -> list[str]:
    """kcat's consume rate and the S3 put ceiling of the run beside the backups that store the most bytes."""
    ceiling, client = s3_put_ceiling(results)
    kcat = kcat_rate(variant)
    stored = [
        f"{FORMAT_LABELS[fmt]} stored {mb_s:,.0f} MB/s inside its job ({_x(ratio(mb_s, ceiling))} the ceiling)"
        for fmt in KCAT_STRETCH_FORMATS
        if (mb_s := stored_mb_s(variant.get("backups", {}).get(fmt) or {}))
    ]
    if not kcat and not ceiling:
        return []
    return [
        "",
        f"Towards the limit: kcat consumed {_rate(kcat)} rec/s (steady ÷ kcat above); the S3 put ceiling of this run "
        f"(boto3 multipart, {client or 'n/a'}) {_n(ceiling, 0)} MB/s"
        + ("; " + ", ".join(stored) if stored else "")
        + ".",
    ]


def _kcat_allowed(run: dict, kcat: float, ceiling: float | None) -> tuple[float, str]:
    """The stretch goal for one backup: 0.5× kcat, or less where the S3 server's put rate cannot take that much (the
    records per second the put ceiling allows at the bytes this backup stores per record), with a note saying so."""
    stored = stored_mb_s(run)
    if not ceiling or not stored or not kcat:
        return KCAT_STRETCH, ""
    bytes_per_record = float(run["stored_mb"]) * 1e6 / float(run["records"])
    bound = ceiling * 1e6 / bytes_per_record / kcat
    if bound >= KCAT_STRETCH:
        return KCAT_STRETCH, ""
    return bound, f" (S3 allows {bound:.2f}×: stored {stored:,.0f} MB/s of the {ceiling:,.0f} MB/s put ceiling)"


PERFORMANCE_III = (
    (
        "1. Partitions: 1,000 × 10 backup < 15 s, restore < 20 s; < 10 ms per partition; "
        "1,000 × 1,000 ≥ 0.8× the rate from 4 partitions",
        _partitions_iii,
    ),
    (
        "2. Small runs without preparation: 4-record backup and restore < 5 s from the second command on",
        _small_runs_iii,
    ),
    ("3. Memory: < 1 GiB for the process tree, 1,000 open field partitions, defaults", _memory_iii),
    (
        "4. Exact mode: Avro/JSON envelope restores ≥ 0.5× raw produce exactly-once; envelope backups ≥ 3× Quix",
        _exact_iii,
    ),
    (
        "5. Follow mode: p99 produce → durable ≤ rotate interval + 3 s; an idle cycle < 0.5 s wall, < 0.2 CPU-s",
        _follow_iii,
    ),
    ("6. Towards the limit: backups' steady rate ÷ kcat's consume; stretch ByteArray/Parquet ≥ 0.5×", _kcat_iii),
)


def performance_iii(results: dict) -> list[dict]:
    """Issue 30's six targets, each with what this run measured of it (``not measured`` where its step did not run)."""
    rows = []
    for target, measure in PERFORMANCE_III:
        measured, held = measure(results)
        rows.append({"target": target, "measured": measured, "held": held})
    return rows


def _performance_iii_section(results: dict) -> list[str]:
    lines = [
        "## Performance III (issue 30)",
        "",
        "Issue 30's targets, each from this run's steps (bench/partitions.py, bench/small_runs.py, the memory case, "
        "the envelope restores and backups, bench/follow.py, kcat's consume); a step that did not run is "
        f"`{NOT_MEASURED}`.",
        "",
        "| target | measured | held |",
        "|---|---|---|",
    ]
    for row in performance_iii(results):
        held = {True: "yes", False: "**no**", None: "n/a"}[row["held"]]
        lines.append(f"| {row['target']} | {row['measured']} | {held} |")
    return [*lines, ""]
