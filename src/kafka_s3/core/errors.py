"""One error hierarchy for the whole project.

Every error a user can cause or meet carries enough context (config key, object key, topic/partition/offset) to be
acted on without a traceback; the CLI prints ``str(error)`` on one line and exits with ``error.exit_code``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class KafkaS3Error(Exception):
    """Base of every error kafka-s3 raises on purpose."""

    exit_code = 1


class ConfigError(KafkaS3Error):
    """A configuration value is missing, malformed or not allowed."""

    exit_code = 2

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class StoreError(KafkaS3Error):
    """The object store refused or failed an operation (after retries)."""

    exit_code = 3


class CatalogError(StoreError):
    """The Iceberg catalog (its database or REST server) could not be reached or refused an operation."""


class ObjectExistsError(StoreError):
    """A conditional create found an object already present under that key."""

    def __init__(self, key: str):
        super().__init__(f"object already exists: {key}")
        self.object_key = key


class BucketNotFoundError(StoreError):
    """The configured bucket does not exist; buckets are never created implicitly."""


class StoreAccessDeniedError(StoreError):
    """Credentials were refused (wrong key/secret, missing permission)."""


class PrunedWhileRestoring(StoreError):
    """A restore's planned object is gone because ``kafka-s3 prune`` (or a backup's retention) removed it after the
    plan was made: the partition's recorded start is now above it. Planning again starts there (``restore --follow``
    does so by itself)."""


class StatusWithoutBucket(StoreError):
    """``status`` read Kafka's side of a backup but not the bucket's (unreachable, refused, missing): ``rows`` hold
    every partition with Kafka's side alone (the bucket's columns empty), so a monitor still sees the lag."""

    def __init__(self, message: str, rows: Sequence[Any]):
        super().__init__(message)
        self.rows = list(rows)


class KafkaError(KafkaS3Error):
    """The Kafka cluster refused or failed an operation."""

    exit_code = 4


class OffsetOutOfRange(KafkaError):
    """The log does not hold the offset asked for: deleted (retention, DeleteRecords) or not written yet."""


class KafkaAuthorizationError(KafkaError):
    """The cluster's ACLs refused a request: the message names the principal, the operation and the resource, so
    optional steps (topic configuration history, the restore plan's policy check) can go on without them."""


class FormatError(KafkaS3Error):
    """An object's bytes cannot be decoded by its format (corrupt, truncated, wrong codec)."""

    exit_code = 5

    def __init__(self, message: str, object_key: str | None = None, position: str | None = None):
        where = ""
        if object_key:
            where = f" in {object_key}"
            if position:
                where += f" at {position}"
        super().__init__(f"{message}{where}")
        self.object_key = object_key
        self.position = position


class ConversionError(KafkaS3Error):
    """A record cannot be converted by the configured converter (e.g. invalid JSON value).

    ``row`` is the index of the offending row in the converted column; callers that know offsets re-raise with
    topic/partition/offset in the message.
    """

    exit_code = 5

    def __init__(self, message: str, row: int | None = None):
        super().__init__(message)
        self.row = row


class PartitionerError(KafkaS3Error):
    """A record cannot be given a directory (missing field, null timestamp...)."""

    exit_code = 5


class LayoutError(KafkaS3Error):
    """An object name inside the layout does not parse."""

    exit_code = 5


class PlanError(KafkaS3Error):
    """A backup or restore cannot start safely (target partitions, missing topics, feedback loop...)."""

    exit_code = 6


class SourceChanged(PlanError):
    """The source log is not the one the bucket holds (the topic deleted and re-created, or another cluster's topic
    of the same name): backing it up there would mix two logs in one backup."""


class BackupLive(PlanError):
    """``prune --execute`` found the backup it would prune running (a commit within a few cycle intervals): nothing
    was removed (``--force`` prunes anyway)."""


class DataError(KafkaS3Error):
    """A record the configuration cannot back up (null value under behavior.on.null.values=fail...)."""

    exit_code = 5


class BackupFailed(KafkaS3Error):
    """One or more partitions hit a record the configuration cannot back up, or (``--once``) failed otherwise."""

    exit_code = 5


class NotInBackup(KafkaS3Error):
    """The backup holds no record at the requested position."""

    exit_code = 5


class NoBackupFound(NotInBackup):
    """The bucket (or prefix) holds no backup: no kafka-s3 metadata, no tree of a known layout's objects."""


class RestoreFailed(KafkaS3Error):
    """Some source partitions stopped at a bad object or record (``behavior.on.error=fail``); ``summary`` (the
    restore's ``RestoreSummary``) tells what was restored, and committed, before, per partition."""

    exit_code = 5

    def __init__(self, message: str, summary: Any = None):
        super().__init__(message)
        self.summary = summary


class BackupIncomplete(KafkaS3Error):
    """The bucket does not hold the whole backup (a missing, truncated or overlapping object): nothing was produced.
    ``findings`` lists each problem (``--allow-gaps`` restores what is there instead)."""

    exit_code = 7

    def __init__(self, message: str, findings: Sequence[object] = ()):
        super().__init__(message)
        self.findings = list(findings)


class BackupUnfinished(KafkaS3Error):
    """Offsets a read asks for lie in (or after) a chunk the backup has not finished uploading: they are not committed
    yet. Reading again once the backup has uploaded it gives them; nothing after such a chunk is ever read first."""

    exit_code = 8

    def __init__(self, message: str, findings: Sequence[object] = ()):
        super().__init__(message)
        self.findings = list(findings)


class EngineError(KafkaS3Error):
    """Spark failed a job (or could not start) for a reason that is not one of the project's own: the message is the
    root cause Spark wrapped (a Python worker's exception, the JVM's)."""

    exit_code = 1


class SparkServerFailed(EngineError):
    """The user's Spark server (``kafka-s3 server start``) did not start, or not in time: the message ends with the
    tail of its log. Commands never raise it: they run Spark in-process instead, saying why."""


class JavaUnavailable(KafkaS3Error):
    """Spark would start a JVM here and there is no Java it can run on: none at all, one older than Spark needs, or a
    ``JAVA_HOME`` that holds none. Found before anything touches Kafka or the object store (nothing written)."""

    exit_code = 9


class Interrupted(KafkaS3Error):
    """The run was stopped by a signal (Ctrl-C, SIGTERM): the running Spark job was cancelled, nothing of it was
    committed (the CLI exits 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM)."""

    exit_code = 130
