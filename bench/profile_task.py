"""Where a whole ``kafka-s3 backup`` / ``restore`` spends the machine's CPU, and what its Python workers do with it.

A target not reached is explained by a profile, not a guess. The rate ÷ raw ratios compare a
command that fetches from Kafka *and* stores to S3 (or reads S3 *and* produces) with a baseline that does only one of
the two, on the same two cores that also run the broker, the S3 server and Spark's JVM. This script runs the
bench's records through one backup and one restore and reports:

- CPU seconds per process kind over the command's wall: the Kafka broker, the S3 server (SeaweedFS), Spark's JVM,
  Spark's Python workers, the command's own Python (the driver), and what else the machine ran (other load);
- the same for the raw confluent-kafka consume / produce baselines of the bench (``limits.py``);
- with ``--py-spy PATH``: py-spy's samples of the Python processes (driver and workers) by activity — Kafka fetch,
  Kafka produce, the format's encode/decode, S3 requests, the Arrow exchange with the JVM, other — and the top frames.

    .venv/bin/python bench/profile_task.py --records 1000000 --format bytearray --py-spy /tmp/tools/bin/py-spy
    .venv/bin/python bench/profile_task.py --format json-gzip --py-spy /tmp/tools/bin/py-spy --idle  # + wall

Nothing is asserted; the numbers go to stdout and ``bench/results/<stamp>-profile.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import create_bucket, create_topic, delete_topics, remove_bucket, services_up
from dataset import Dataset, payload_bytes, produce
from limits import raw_consume, raw_produce
from product import FORMATS, backup_properties, restore_properties, write_properties

TICK = os.sysconf("SC_CLK_TCK")
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# (kind, test on the command line); the first that matches names a process
KINDS = (
    ("kafka broker", lambda cmd: "kafka.Kafka" in cmd or "noida" in cmd),
    ("s3 server", lambda cmd: "weed" in cmd),
    # spark-class is the JVM's pid: bash execs java, the command line seen first may be the script's
    ("spark jvm", lambda cmd: "spark-class" in cmd or ("java" in cmd and "spark" in cmd)),
    ("python workers", lambda cmd: "pyspark.daemon" in cmd or "pyspark.worker" in cmd),
    ("command (driver)", lambda cmd: "kafka_s3.cli" in cmd),
    ("py-spy", lambda cmd: "py-spy" in cmd),
)

# py-spy activities: (name, pattern on a frame); a sample goes to the first whose pattern a frame matches, leaf first
ACTIVITIES = (
    ("imports (process start)", re.compile(r"importlib|zipimport")),
    ("kafka fetch", re.compile(r"consume|io/kafka/reader|kafka_source")),
    ("kafka produce", re.compile(r"produce|flush \(|commit_transaction|send_offsets|begin_transaction")),
    ("s3 requests", re.compile(r"botocore|boto3|urllib3|awscrt|http/client|socket\.py|ssl\.py|hashlib|io/stores")),
    ("format", re.compile(r"core/formats|core/records|fastavro|pyarrow|numpy|orjson|gzip|zlib")),
    ("spark daemon / py4j", re.compile(r"pyspark/daemon|daemon\.py|py4j|pyspark/serializers|pyspark/worker")),
)


def cpu_of(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kind_of(pid: int) -> str:
    if pid == os.getpid():
        return "this script (raw baselines)"
    cmd = cmdline(pid)
    return next((name for name, test in KINDS if test(cmd)), "other")


class CpuSampler(threading.Thread):
    """Every process's CPU time, sampled: the last value seen of a process that exits counts (up to one interval of
    its CPU is lost); the machine's total from /proc/stat."""

    def __init__(self, interval: float = 0.25):
        super().__init__(daemon=True)
        self.interval = interval
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.kinds: dict[int, str] = {}
        self.commands: dict[int, str] = {}
        self.done = threading.Event()
        self.machine = (0.0, 0.0)
        self.sampled = False

    @staticmethod
    def machine_cpu() -> float:
        parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        busy = sum(int(x) for i, x in enumerate(parts) if i not in (3, 4))  # all but idle, iowait
        return busy / TICK

    def sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            cpu = cpu_of(pid)
            if cpu is None:
                continue
            if pid not in self.first:
                # a process already running counts from here; one started during the run from zero
                self.first[pid] = 0.0 if self.sampled else cpu
                self.kinds[pid] = kind_of(pid)
                self.commands[pid] = cmdline(pid)[:160]
            self.last[pid] = cpu
        self.sampled = True

    def run(self) -> None:
        start = self.machine_cpu()
        self.sample()
        while not self.done.wait(self.interval):
            self.sample()
        self.sample()
        self.machine = (start, self.machine_cpu())

    def stop(self) -> dict[str, float]:
        self.done.set()
        self.join()
        out: dict[str, float] = collections.defaultdict(float)
        for pid, last in self.last.items():
            out[self.kinds[pid]] += last - self.first[pid]
            if last - self.first[pid] >= 1.0 and self.kinds[pid] == "other":
                print(f"  other: pid {pid} {last - self.first[pid]:.1f} CPU s: {self.commands[pid]}", flush=True)
        out["machine (all)"] = self.machine[1] - self.machine[0]
        return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.05}


def measured(call):
    sampler = CpuSampler()
    sampler.start()
    time.sleep(0.3)  # the first sample sees everything already running
    started = time.monotonic()
    try:
        result = call()
    finally:
        wall = time.monotonic() - started
        cpu = sampler.stop()
    return result, wall, cpu


def _activity(frames: list[str]) -> str:
    for frame in reversed(frames):
        hit = next((name for name, pattern in ACTIVITIES if pattern.search(frame)), None)
        if hit:
            return hit
    return "other"


def _is_task_thread(frames: list[str]) -> bool:
    """The main thread of a Spark Python worker (forked by the daemon): the thread that runs a task, and waits for
    the JVM between tasks (a ``--idle`` profile only; without ``--threads`` no stack names its thread)."""
    return any(f.endswith(": MainThread") for f in frames) and any("worker.py" in f for f in frames)


def activities(raw: Path) -> dict:
    """py-spy's ``--format raw`` (one collapsed stack and its count per line) by activity and top leaf frames; for an
    ``--idle`` profile also the task threads' samples by activity, i.e. where a task's wall time goes."""
    by_activity: collections.Counter[str] = collections.Counter()
    task_wall: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        leaves[frames[-1][:140]] += n
        found = _activity(frames)
        by_activity[found] += n
        if _is_task_thread(frames):
            task_wall[found] += n
    out = {
        "samples": total,
        "by_activity": {k: round(v / total, 3) for k, v in by_activity.most_common()} if total else {},
        "top_frames": [(f, round(n / total, 3)) for f, n in leaves.most_common(20)] if total else [],
    }
    if task_wall:
        tasks = sum(task_wall.values())
        out["task_threads"] = {
            "samples": tasks,
            "by_activity": {k: round(v / tasks, 3) for k, v in task_wall.most_common()},
        }
    return out


def run_command(args: list[str], env: dict, log: Path, py_spy: str | None, raw: Path, idle: bool = False) -> None:
    command = [sys.executable, "-m", "kafka_s3.cli", *args]
    if py_spy:
        command = [
            py_spy,
            "record",
            "--subprocesses",
            *(["--idle", "--threads"] if idle else []),
            "--rate",
            "50",
            "--format",
            "raw",
            "-o",
            str(raw),
            "--",
            *command,
        ]
    with open(log, "ab") as out:
        done = subprocess.run(command, env=env, stdout=out, stderr=out, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:1])} failed ({done.returncode}); see {log}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--format", default="bytearray", choices=sorted(FORMATS))
    p.add_argument("--mode", default="eos", choices=("eos", "alo"))
    p.add_argument("--kafka", default="apache", choices=("apache", "noida"))
    p.add_argument("--py-spy", help="py-spy executable: also sample the Python processes")
    p.add_argument(
        "--idle",
        action="store_true",
        help="with --py-spy: sample waiting threads too, and report the task threads' samples by activity (where a "
        "task's wall time goes, CPU or not)",
    )
    args = p.parse_args()

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = RESULTS_DIR / f"{stamp}-profile.tmp"
    work.mkdir(parents=True, exist_ok=True)
    services = services_up(args.kafka, work)
    env = services.environ()
    tag = uuid.uuid4().hex[:8]
    ds = Dataset(f"profile-{tag}", args.records, args.value_size, args.partitions)
    target, bucket = f"profile-{tag}-restored", f"profile-{tag}"
    report: dict = {"records": args.records, "value_size": args.value_size, "partitions": args.partitions}
    report.update({"format": args.format, "mode": args.mode, "kafka": services.describe()["kafka"]})
    create_topic(services, ds.topic, ds.partitions)
    create_bucket(services, bucket)
    try:
        report["produce"] = produce(services.bootstrap, ds)
        report["payload_mb"] = round(payload_bytes(ds) / 1e6, 1)
        steps = {
            "raw consume": lambda: raw_consume(services, ds),
            "backup": lambda: run_command(
                [
                    "backup",
                    "--once",
                    "--no-progress",
                    "-c",
                    str(
                        write_properties(
                            work / "b.properties",
                            {**backup_properties(f"profile-{tag}", ds.topic, bucket, args.format, 50_000)},
                        )
                    ),
                ],
                env,
                work / "backup.log",
                args.py_spy,
                work / "backup.pyspy",
                args.idle,
            ),
            "raw produce": lambda: raw_produce(services, ds),
            "restore": lambda: run_command(
                [
                    "restore",
                    "--no-progress",
                    "-c",
                    str(
                        write_properties(
                            work / "r.properties",
                            {**restore_properties(f"profile-{tag}", ds.topic, target, bucket, args.format, args.mode)},
                        )
                    ),
                ],
                env,
                work / "restore.log",
                args.py_spy,
                work / "restore.pyspy",
                args.idle,
            ),
        }
        for name, call in steps.items():
            _, wall, cpu = measured(call)
            entry = {"wall_s": round(wall, 2), "rate": round(args.records / wall), "cpu_s": cpu}
            spy = work / f"{name}.pyspy"
            if spy.exists():
                entry["py_spy"] = activities(spy)
            report[name] = entry
            print(f"{name}: {wall:.1f} s, {args.records / wall:,.0f} rec/s; CPU s: {cpu}", flush=True)
            if "py_spy" in entry:
                print(f"  python by activity: {entry['py_spy']['by_activity']}", flush=True)
                if "task_threads" in entry["py_spy"]:
                    print(f"  task threads by activity: {entry['py_spy']['task_threads']['by_activity']}", flush=True)
    finally:
        delete_topics(services, [ds.topic, target])
        remove_bucket(services, bucket)
    out = RESULTS_DIR / f"{stamp}-profile.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
