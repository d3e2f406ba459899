"""The peer from the project's side: create ``.venv-peer`` on first use, run ``bench/peer_quix.py`` in it as a
measured subprocess (whole-tree RSS), and turn its timings into the same shape as a kafka-s3 run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from common import ROOT, Services, run_measured

PEER_VENV = ROOT / ".venv-peer"
PEER_PYTHON = PEER_VENV / "bin" / "python"
PEER_PACKAGES = ["quixstreams[s3,parquet]", "boto3"]
SCRIPT = Path(__file__).resolve().parent / "peer_quix.py"


def ensure_peer_venv() -> str | None:
    """Create the peer venv if needed; returns an error text when Quix Streams cannot be installed."""
    try:
        if (
            PEER_PYTHON.exists()
            and subprocess.run(
                [str(PEER_PYTHON), "-c", "import quixstreams, pyarrow, boto3"], capture_output=True
            ).returncode
            == 0
        ):
            return None
        print(f"  creating {PEER_VENV.name} with {' '.join(PEER_PACKAGES)} (first use only)")
        if not PEER_PYTHON.exists():
            subprocess.run(
                [shutil.which("python3") or sys.executable, "-m", "venv", str(PEER_VENV)],
                check=True,
                capture_output=True,
            )
        subprocess.run(
            [str(PEER_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PEER_PACKAGES],
            check=True,
            capture_output=True,
        )
        return None
    except subprocess.CalledProcessError as exc:
        return f"could not set up {PEER_VENV.name}: {(exc.stderr or b'').decode(errors='replace')[-500:]}"


def peer_version() -> str:
    out = subprocess.run(
        [
            str(PEER_PYTHON),
            "-c",
            "import quixstreams, confluent_kafka; "
            "print(quixstreams.__version__, '(confluent-kafka', confluent_kafka.__version__ + ')')",
        ],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def run_peer(mode: str, services: Services, log: Path, timeout: float, **options) -> dict:
    args = [str(PEER_PYTHON), str(SCRIPT), mode]
    for key, value in options.items():
        args += [f"--{key}", str(value)]
    args += ["--timeout", str(timeout)]
    run = run_measured(args, services.environ(), log, timeout + 120, capture_stdout=True)
    times: dict = {}
    for line in reversed(run.stdout.splitlines()):
        if line.startswith("{"):
            times = json.loads(line)
            break
    result = {
        "kind": f"quix {mode}",
        "log": str(log),
        "returncode": run.returncode,
        "timed_out": run.timed_out or bool(times.get("timed_out")),
        "wall_s": run.wall,
        "records": times.get("records", 0),
        "peer_times": times,
        "peak_rss": run.peak_rss,
        "peak_pss": run.peak_pss,
        "peak_rss_breakdown": run.peak_breakdown,
        "peak_processes": run.peak_processes,
    }
    if "done" in times and "first" in times:
        # Same split as kafka-s3: "start" = until the first record moves, steady = first record to everything done.
        result["spark_start_s"] = None
        result["startup_s"] = times["first"]
        result["job_s"] = times["done"] - times["first"]
        result["done_s"] = times["done"]
    if run.returncode != 0 or "error" in times:
        result["error"] = times.get("error") or run.tail()
    return result
