"""The one configuration a job's Spark tasks receive: parsed and checked once on the driver, pickled once with the job.

A task builds its plugins and store client from it (once per Python worker: :mod:`kafka_s3.runtime.worker_cache`),
and never parses properties: what the driver validated, warned about and detected (a peer's layout) is what every
task runs with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from kafka_s3.core.config.model import Config
from kafka_s3.runtime.worker_cache import cached

if TYPE_CHECKING:
    from kafka_s3.core.store import Store
    from kafka_s3.io.stores.spec import StoreSpec

T = TypeVar("T")


@dataclass(frozen=True)
class TaskSettings:
    config: Config
    store: StoreSpec
    # The task's Kafka clients: a backup's consumer, or a restore's producer and its progress consumer
    kafka: Mapping[str, str] = field(default_factory=dict)
    consumer: Mapping[str, str] = field(default_factory=dict)

    def plugins(self, kind: str, build: Callable[[Config], T]) -> T:
        """``build(config)``, once per worker and configuration (``kind`` names what is built)."""
        return cached(f"{kind}:{self.config.fingerprint}", lambda: build(self.config))

    def open_store(self) -> Store:
        return cached(f"store:{self.store!r}", self.store.open)
