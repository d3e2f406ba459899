"""What a Spark Python worker imports before its first kafka-s3 task, and what that costs: resident memory and CPU of
a fresh interpreter set up as a worker (``import pyspark.worker``, as Spark's daemon does before it forks one), then
the warm-up job's function (``kafka_s3.spark.session._import_modules``: every task module, run in each worker of a
local session as it starts), fed its slot batch over Arrow IPC as Spark feeds it.

    .venv/bin/python bench/worker_imports.py --rounds 3                               # this checkout
    .venv/bin/python bench/worker_imports.py --rounds 3 --base-src /tmp/base/src      # alternating with another tree

With ``--base-src`` the two trees run alternately (``PYTHONPATH`` first), so both see the same load. Prints one JSON
line per run and the medians; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import json, sys, time
import pyspark.worker  # noqa: F401  (the daemon's import, before it forks a worker)
def rss():
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmRSS"))
daemon = rss()
started = time.process_time()
import pyarrow as pa
from kafka_s3.spark.session import _import_modules
list(_import_modules(iter(pa.ipc.open_stream(pa.BufferReader(sys.stdin.buffer.read())))))
heavy = ("pandas", "pyarrow.compute", "pyarrow.parquet", "boto3", "confluent_kafka", "fastavro")
print(json.dumps({
    "daemon_rss_mib": round(daemon), "after_imports_rss_mib": round(rss()),
    "imports_cpu_s": round(time.process_time() - started, 3),
    "loaded": [m for m in heavy if m in sys.modules], "kafka_s3": sys.modules["kafka_s3"].__file__,
}))
"""


def slot_batch() -> bytes:
    sink = pa.BufferOutputStream()
    batch = pa.RecordBatch.from_arrays([pa.array([0], pa.int64())], names=["id"])
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def run_once(src: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    result = subprocess.run(
        [sys.executable, "-c", WORKER], input=slot_batch(), capture_output=True, env=env, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"worker set-up failed under {src}:\n{result.stderr.decode()[-3000:]}")
    out: dict = json.loads(result.stdout.decode().strip().splitlines()[-1])
    out["load"] = round(os.getloadavg()[0], 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base-src", type=Path, help="another tree's src/ to run alternately (e.g. main's)")
    args = parser.parse_args(argv)
    trees = {"this": ROOT / "src"}
    if args.base_src:
        trees = {"base": args.base_src, **trees}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            out = run_once(src)
            runs[name].append(out)
            print(json.dumps({"tree": name, **out}), flush=True)
    print("\n| tree | RSS after imports (median) | import CPU (median) | loaded | load (1 min) |")
    print("|---|--:|--:|---|--:|")
    for name, rows in runs.items():
        print(
            f"| {name} | {statistics.median(r['after_imports_rss_mib'] for r in rows):.0f} MiB | "
            f"{statistics.median(r['imports_cpu_s'] for r in rows):.2f} s | {', '.join(rows[-1]['loaded'])} | "
            f"{statistics.median(r['load'] for r in rows):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
