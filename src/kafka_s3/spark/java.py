"""The Java runtime Spark would start: where it is, what ``java -version`` says, and whether Spark can run on it —
found without starting Spark, so that a machine without a fit Java is told what to install before a command touches
Kafka or the object store (rather than ``[JAVA_GATEWAY_EXITED]`` after it did)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kafka_s3.core.errors import JavaUnavailable

MINIMUM_JAVA = 17
"""The oldest Java the supported pyspark releases (4.x) run on."""

_VERSION = re.compile(r'version "(?P<version>[^"]+)"')


def java_executable() -> str | None:
    """``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set (as ``spark-class`` uses it), else ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def major_version(version_output: str) -> int | None:
    """The feature release of ``java -version``'s output: 8 for ``"1.8.0_392"``, 17 for ``"17.0.13"``, 21 for
    ``"21"``, 25 for ``"25-ea"``; None when no line names a version (lines such as ``Picked up JAVA_TOOL_OPTIONS``
    may come first)."""
    found = _VERSION.search(version_output)
    if found is None:
        return None
    numbers = re.findall(r"\d+", found["version"])
    if not numbers:
        return None
    first = int(numbers[0])
    return int(numbers[1]) if first == 1 and len(numbers) > 1 else first


def version_line(version_output: str) -> str | None:
    """The line of ``java -version``'s output that names the version (``openjdk version "17.0.13" 2024-10-15``)."""
    return next((line.strip() for line in version_output.splitlines() if _VERSION.search(line)), None)


@dataclass(frozen=True)
class JavaFound:
    """What looking for Spark's Java found: ``executable`` (None: none), its ``-version`` line and feature release
    (None: it did not say), or ``problem``, the reason there is none or it did not run."""

    executable: str | None
    version: str | None = None
    major: int | None = None
    problem: str | None = None

    def describe(self) -> str:
        """What was found, for a person: ``none (JAVA_HOME is not set, no java on the PATH)``, ``Java 11 (openjdk
        version "11.0.22" 2024-01-16 at /usr/bin/java)``..."""
        if self.executable is None:
            return f"none ({self.problem})"
        if self.major is None:
            return f"{self.executable}, which {self.problem or 'did not say its version'}"
        return f"Java {self.major} ({self.version} at {self.executable})"


@functools.lru_cache(maxsize=8)
def _look(java_home: str | None, path: str | None) -> JavaFound:
    del path  # part of the cache key: java_executable() reads it from the environment
    java = java_executable()
    if java is None:
        if java_home:
            return JavaFound(None, problem=f"JAVA_HOME={java_home} holds no bin/java")
        return JavaFound(None, problem="JAVA_HOME is not set, no java on the PATH")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return JavaFound(java, problem=f"did not run ({exc})")
    said = f"{done.stderr}\n{done.stdout}"
    line = version_line(said)
    if line is None:
        first = next((text.strip() for text in said.splitlines() if text.strip()), "nothing")
        return JavaFound(java, problem=f"did not say its version (java -version said: {first})")
    return JavaFound(java, line, major_version(line))


def find_java() -> JavaFound:
    """The Java ``spark-class`` would start here, and its version (asked once per ``JAVA_HOME`` and ``PATH``)."""
    return _look(os.environ.get("JAVA_HOME") or None, os.environ.get("PATH"))


def java_version() -> str:
    """The version line of ``java -version`` (e.g. ``openjdk version "17.0.13" 2024-10-15``), or what is wrong."""
    found = find_java()
    if found.version:
        return found.version
    return f"not found ({found.problem})" if found.executable is None else f"{found.executable} {found.problem}"


def install_hint(minimum: int = MINIMUM_JAVA) -> str:
    """How to get a fit Java on this kind of machine."""
    if sys.platform == "darwin":
        return f"brew install openjdk@{minimum}"
    return f"apt-get install openjdk-{minimum}-jre-headless"


def require_java(minimum: int = MINIMUM_JAVA) -> JavaFound:
    """The Java Spark would start, if it is ``minimum`` or newer; else :class:`JavaUnavailable`, one line saying what
    was found and what to install (or that ``--remote`` runs Spark elsewhere)."""
    found = find_java()
    if found.major is not None and found.major >= minimum:
        return found
    raise JavaUnavailable(
        f"Spark needs Java {minimum} or newer; found {found.describe()}: install a Java {minimum} runtime "
        f"(e.g. {install_hint(minimum)}) and put it on the PATH or set JAVA_HOME, "
        "or run Spark elsewhere with --remote sc://HOST:PORT"
    )
