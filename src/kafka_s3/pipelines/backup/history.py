"""What a backup keeps beside the records: each topic's partition count and configurations, its Schema Registry
subjects and the consumer groups' offsets on it, each a time-stamped series in the bucket (:mod:`kafka_s3.core.
snapshots`) written only when it changed.

None of them stops the records' backup: a part that fails to save is retried next cycle, and ``run_once`` ends
with :class:`PartsNotSaved` (the failing service's exit code) once the records are backed up.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import Interrupted, KafkaAuthorizationError, KafkaS3Error
from kafka_s3.core.groups import SERIES as GROUP_SERIES
from kafka_s3.core.groups import GroupSnapshot
from kafka_s3.core.manifest import ManifestStore
from kafka_s3.core.schemas import SERIES as SCHEMA_SERIES
from kafka_s3.core.snapshots import Record, Series
from kafka_s3.core.topic_config import SERIES as CONFIG_SERIES
from kafka_s3.core.topic_config import TopicConfig
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.denied import lacks

log = logging.getLogger("kafka_s3.backup")

# The parts, as logs and a --once run's error name them
SCHEMAS = "Schema Registry subjects"
TOPIC_CONFIGS = "topic configurations"
GROUP_SNAPSHOT = "consumer-group snapshot"


class PartsNotSaved(KafkaS3Error):
    """``backup --once`` backed the records up, but not every other part it was asked to save; the exit code is
    the failing service's (3 object store, 4 Kafka or Schema Registry)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class History:
    """The series of one backup (one run's view: the newest record of each, so an unchanged one is not rewritten)."""

    def __init__(self, config: Config, admin: Admin, manifests: ManifestStore, own_group: str, once: bool = False):
        self.config = config
        self.admin = admin
        self.manifests = manifests
        self.own_group = own_group
        self.once = once  # a part not saved fails the run (there is no next cycle to retry it in)
        self._newest: dict[tuple[str, str], Any] = {}  # (series directory, topic) -> newest record stored
        self._noted_counts: dict[str, int] = {}
        self._unsaved: dict[str, KafkaS3Error] = {}  # part -> why its last save failed (cleared when one succeeds)
        self._warned: set[str] = set()  # warnings given once per run
        self._groups_listing_checked = False
        self._groups_refused: set[str] = set()  # groups whose offsets were refused, already warned about
        # Groups found to be kafka-s3's own (other backups'): not asked for again this run, as they stay backups'
        self._kafka_s3_groups: set[str] = set()

    # ------------------------------------------------------------------------------------------------ parts
    def note_topics(self, topics: dict[str, int]) -> None:
        """Each cycle's topics: their partition counts (a restore creates missing topics with them), configurations
        and Schema Registry subjects."""
        for topic, count in topics.items():
            if self._noted_counts.get(topic) != count:
                self.manifests.note_partition_count(topic, count)
                self._noted_counts[topic] = count
        self._note_topic_configs(topics)
        self._note_schemas(topics)

    def _note(self, series: Series[Any], record: Record, unchanged: bool) -> bool:
        """Store ``record`` unless ``unchanged(newest stored)`` says it repeats it; whether it was stored."""
        if unchanged:
            return False
        self.manifests.note(series, record)
        self._newest[(series.directory, record.topic)] = record
        return True

    def newest(self, series: Series[Any], topic: str) -> Any:
        """The newest record of ``series`` for ``topic`` (read from the bucket once per run)."""
        key = (series.directory, topic)
        if key not in self._newest:
            self._newest[key] = self.manifests.newest(series, topic)
        return self._newest[key]

    def _note_schemas(self, topics: dict[str, int]) -> None:
        """The topics' Schema Registry subjects (when a registry is configured)."""
        from kafka_s3.io.schema_registry.subjects import registry_for, save_subjects

        try:
            client = registry_for(self.config.originals)
            if client is None:
                return
            at = int(time.time() * 1000)
            for topic in sorted(topics):
                saved = save_subjects(client, topic, at)
                last = self.newest(SCHEMA_SERIES, topic)
                if self._note(SCHEMA_SERIES, saved, saved.same_as(last) or (last is None and not saved.subjects)):
                    log.info("%s: saved Schema Registry subjects %s", topic, ", ".join(sorted(saved.subjects)))
        except KafkaS3Error as exc:
            self._not_saved(SCHEMAS, exc)
            return
        self._saved(SCHEMAS)

    def _note_topic_configs(self, topics: dict[str, int]) -> None:
        """Each topic's partition count and own configs; without the ACL to read them, a warning (once)."""
        try:
            configs = self.admin.topic_configs(topics)
            at = int(time.time() * 1000)
            for topic, count in sorted(topics.items()):
                record = TopicConfig(topic, at, count, configs.get(topic, {}))
                if self._note(CONFIG_SERIES, record, record.same_as(self.newest(CONFIG_SERIES, topic))):
                    log.info(
                        "%s: recorded %d partitions and configs %s",
                        topic,
                        count,
                        ", ".join(f"{k}={v}" for k, v in sorted(record.configs.items())) or "(defaults)",
                    )
        except KafkaAuthorizationError as exc:  # optional history: warned once, tried again each cycle
            if str(exc) not in self._warned:
                self._warned.add(str(exc))
                log.warning("topic configurations not recorded (grant the ACL to record them): %s", exc)
        except KafkaS3Error as exc:
            self._not_saved(TOPIC_CONFIGS, exc)
            return
        self._saved(TOPIC_CONFIGS)

    def snapshot_groups(self, topics: list[str]) -> None:
        """The committed offsets of the consumer groups on ``topics`` (``backup.consumer.groups.*``), taken after a
        cycle's commit."""
        if not self.config["backup.consumer.groups.enable"] or not topics:
            return
        pattern = re.compile(self.config["backup.consumer.groups.regex"])
        try:
            groups = [
                g
                for g in self.admin.list_groups()
                if g != self.own_group
                and g not in self._kafka_s3_groups
                and pattern.fullmatch(g)
                and not g.startswith("kafka-s3-restore-")
            ]
            if not self._groups_listing_checked:
                self._groups_listing_checked = True
                self._check_group_listing(groups)
            found = self.admin.groups_on_topics(groups, topics)
            self._kafka_s3_groups |= found.own
            self._warn_refused(found.refused)
            at = int(time.time() * 1000)
            for topic in topics:
                snapshot = GroupSnapshot(
                    topic,
                    at,
                    {
                        group: {p: o for (t, p), o in sorted(tps.items()) if t == topic}
                        for group, tps in found.offsets.items()
                        if any(t == topic for t, _ in tps)
                    },
                )
                last = self.newest(GROUP_SERIES, topic)
                unchanged = snapshot.same_offsets(last) or (last is None and not snapshot.groups)
                if self._note(GROUP_SERIES, snapshot, unchanged):
                    log.info(
                        "%s: consumer-group snapshot of %d group(s) at %d",
                        topic,
                        len(snapshot.groups),
                        at,
                        extra={"topic": topic, "groups": sorted(snapshot.groups), "at": at},
                    )
        except KafkaS3Error as exc:
            self._not_saved(GROUP_SNAPSHOT, exc)
            return
        self._saved(GROUP_SNAPSHOT)

    def _warn_refused(self, refused: dict[str, str]) -> None:
        newly = sorted(set(refused) - self._groups_refused)
        if not newly:
            return
        self._groups_refused.update(newly)
        shown = "; ".join(refused[g] for g in newly[:5]) + (f"; and {len(newly) - 5} more" if len(newly) > 5 else "")
        log.warning(
            "consumer-group snapshots leave out %d group(s) whose offsets the cluster refused to show: %s "
            "(grant DESCRIBE on them, or narrow backup.consumer.groups.regex)",
            len(newly),
            shown,
        )

    def _check_group_listing(self, groups: list[str]) -> None:
        """Listing consumer groups shows a principal without DESCRIBE on the cluster only the groups it may DESCRIBE:
        said once, as a warning when that leaves nothing to record (never silently no snapshots)."""
        operations = self.admin.cluster_operations()
        if operations is None:
            # Apache Kafka reports no operations for a principal without DESCRIBE on the cluster, and a server without
            # ACLs (noida) none at all: the backup's own group (it has READ on it) tells which
            own = self.admin.describe_groups([self.own_group]).get(self.own_group)
            if own is None or own.operations is None:
                return
        elif "DESCRIBE" in operations:
            return
        lacking = lacks(self.admin.settings, "DESCRIBE", "cluster", "kafka-cluster")
        if groups:
            log.info(
                "consumer-group snapshots: %s, so they record only the groups it may DESCRIBE (%d match "
                "backup.consumer.groups.regex now)",
                lacking,
                len(groups),
            )
            return
        log.warning(
            "consumer-group snapshots record nothing: %s, so listing consumer groups shows only the groups it may "
            "DESCRIBE, and none of those matches backup.consumer.groups.regex; grant DESCRIBE on the consumer groups "
            "to record (a PREFIXED ACL serves many) or on the cluster, or set backup.consumer.groups.enable=false",
            lacking,
        )

    # ------------------------------------------------------------------------------------------------ failures
    def _not_saved(self, part: str, exc: KafkaS3Error) -> None:
        if isinstance(exc, Interrupted):
            raise exc
        self._unsaved[part] = exc
        log.error("%s not saved%s: %s", part, "" if self.once else " (retried next cycle)", exc)

    def _saved(self, part: str) -> None:
        self._unsaved.pop(part, None)

    def raise_unsaved(self, records: int, objects: int) -> None:
        """``run_once``'s end: the parts it could not save, as one error with the exit code of the first failing
        service (3 object store, 4 Kafka or Schema Registry)."""
        if not self._unsaved:
            return
        first = next(iter(self._unsaved.values()))
        raise PartsNotSaved(
            f"the records were backed up ({records} records in {objects} objects), but not saved: "
            + "; ".join(f"the {part} ({exc})" for part, exc in self._unsaved.items()),
            exit_code=first.exit_code,
        )
