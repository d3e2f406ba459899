"""A restore killed with kill -9 on this machine lets go of its targets at once: its claim's process is gone."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys

from kafka_s3.core.leases import Claim
from kafka_s3.io.kafka.leases import _proc, _process_start, ended


def here(pid: int) -> Claim:
    return Claim(
        "run",
        "restore",
        "s3://b/topics",
        ("t",),
        socket.gethostname(),
        pid,
        boot=_proc("/proc/sys/kernel/random/boot_id"),
        process_start=_process_start(pid),
    )


def test_a_live_process_holds_its_claim_and_a_killed_one_does_not():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        claim = here(child.pid)
        assert not ended(claim) and not ended(here(os.getpid()))
    finally:
        child.kill()
        child.wait()
    assert ended(claim)


def test_a_reused_pid_or_another_machine_is_not_taken_for_the_claims_process():
    mine = here(os.getpid())
    assert ended(dataclasses.replace(mine, process_start="1"))  # the pid now names another process
    assert not ended(dataclasses.replace(mine, host="elsewhere", pid=999_999))  # cannot tell: alive until it expires
    assert not ended(dataclasses.replace(mine, boot="", pid=999_999))
