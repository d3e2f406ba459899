"""Issue 28 item 2: which Java Spark would start, read from ``java -version`` without starting Spark, and the one
line that says what is wrong and what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_s3.core.errors import JavaUnavailable
from kafka_s3.spark import java


@pytest.mark.parametrize(
    ("said", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "25-ea" 2025-09-16', 25),
        ('Picked up JAVA_TOOL_OPTIONS: -Xmx1g\nopenjdk version "11.0.22" 2024-01-16', 11),
        ("Error: could not find libjava.so", None),
    ],
)
def test_major_version_reads_every_form_of_java_version(said, major):
    assert java.major_version(said) == major


def test_version_line_skips_what_the_jvm_says_before_the_version():
    said = 'Picked up JAVA_TOOL_OPTIONS: -Xmx1g\nopenjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment'
    assert java.version_line(said) == 'openjdk version "17.0.15" 2025-04-15'


def fake_java(tmp_path: Path, said: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "java"
    script.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{said}\nEOF\n")
    script.chmod(0o755)
    return home


@pytest.mark.issue(28, item=2)
def test_require_java_names_an_old_java_and_what_to_install(tmp_path, monkeypatch):
    home = fake_java(tmp_path, 'openjdk version "11.0.22" 2024-01-16')
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaUnavailable) as raised:
        java.require_java()
    message = str(raised.value)
    assert message.startswith(
        f'Spark needs Java 17 or newer; found Java 11 (openjdk version "11.0.22" 2024-01-16 at {home}/bin/java)'
    )
    assert "install a Java 17 runtime" in message and "--remote sc://HOST:PORT" in message
    assert raised.value.exit_code == 9


@pytest.mark.issue(28, item=2)
def test_require_java_accepts_17_and_newer(tmp_path, monkeypatch):
    home = fake_java(tmp_path, 'openjdk version "21.0.2" 2024-01-16')
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java.require_java().major == 21


@pytest.mark.issue(28, item=2)
def test_require_java_says_what_a_java_home_lacks_or_that_there_is_no_java(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaUnavailable, match=f"found none \\(JAVA_HOME={tmp_path} holds no bin/java\\)"):
        java.require_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaUnavailable, match="found none \\(JAVA_HOME is not set, no java on the PATH\\)"):
        java.require_java()


@pytest.mark.issue(28, item=2)
def test_a_java_that_does_not_say_its_version_is_named(tmp_path, monkeypatch):
    home = fake_java(tmp_path, "Error: could not find libjava.so")
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaUnavailable, match="did not say its version \\(java -version said: Error: could not find"):
        java.require_java()
