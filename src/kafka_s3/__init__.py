"""kafka-s3: Kafka topics backed up to S3-compatible storage and restored, on Spark.

The Python API (:mod:`kafka_s3.api`) is available from the package itself, loaded on first use so that importing
``kafka_s3`` stays cheap (every Spark worker does)::

    import kafka_s3

    summary = kafka_s3.backup("orders.properties", once=True)
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "BackupSummary",
    "KafkaS3Error",
    "RestoreOptions",
    "RestoreSummary",
    "VerifyReport",
    "backup",
    "check_spark_runtime",
    "compact",
    "configurations",
    "create_bucket",
    "groups",
    "info",
    "ls",
    "open_backup",
    "open_restore",
    "plan_restore",
    "prune",
    "read",
    "restore",
    "restore_options",
    "server_start",
    "server_status",
    "server_stop",
    "status",
    "status_prometheus",
    "validate",
    "verify",
    "versions",
]


def __getattr__(name: str) -> Any:
    if name == "KafkaS3Error":
        from kafka_s3.core.errors import KafkaS3Error

        return KafkaS3Error
    if name in __all__:
        from kafka_s3 import api

        return getattr(api, name)
    raise AttributeError(f"module 'kafka_s3' has no attribute {name!r}")
