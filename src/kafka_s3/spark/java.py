"""The Java runtime Spark would start: where it is and what ``java -version`` says, without starting Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def java_executable() -> str | None:
    """``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set (as ``spark-class`` uses it), else ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java")


def java_version() -> str:
    """The first line of ``java -version`` (e.g. ``openjdk version "17.0.13" 2024-10-15``), or what is wrong."""
    java = java_executable()
    if java is None:
        home = os.environ.get("JAVA_HOME")
        return f"not found (JAVA_HOME={home} holds no bin/java)" if home else "not found (no java on the PATH)"
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{java} did not run ({exc})"
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[0] if lines else f"{java} said nothing"
