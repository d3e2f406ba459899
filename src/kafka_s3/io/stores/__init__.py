"""Object stores behind one interface: S3 (boto3) and a local directory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_s3.core.registry import Registry

if TYPE_CHECKING:
    from kafka_s3.core.store import Store
    from kafka_s3.io.stores.spec import StoreSpec

#: store classes, called with the job's :class:`StoreSpec`
REGISTRY: Registry[Callable[[StoreSpec], Store]] = Registry("store", "storage.class")
REGISTRY.register(
    "s3",
    "kafka_s3.io.stores.s3:S3Store",
    aliases=("io.confluent.connect.s3.storage.S3Storage", "S3Storage"),
)
REGISTRY.register("local", "kafka_s3.io.stores.local:LocalStore", aliases=("file",))
