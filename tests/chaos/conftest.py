"""Fixtures of the crash trials (helpers live in chaos_helpers.py)."""

from __future__ import annotations

import os
import random
import time

import pytest


@pytest.fixture(scope="session")
def chaos_trials() -> int:
    return int(os.environ.get("KAFKA_S3_CHAOS_TRIALS", "5"))


@pytest.fixture(scope="session")
def chaos_random() -> random.Random:
    seed = int(os.environ.get("KAFKA_S3_CHAOS_SEED", str(int(time.time()))))
    print(f"chaos seed {seed}")
    return random.Random(seed)
