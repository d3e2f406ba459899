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


@pytest.fixture
def new_bucket(s3_client, remove_bucket):
    """``new_bucket(name)`` creates a bucket, removed (with its objects) after the test."""
    created: list[str] = []

    def make(name: str) -> str:
        s3_client.create_bucket(Bucket=name)
        created.append(name)
        return name

    yield make
    for name in created:
        remove_bucket(name)
