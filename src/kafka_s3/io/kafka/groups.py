"""The consumer-group requests of :class:`~kafka_s3.io.kafka.admin.Admin`: committed offsets read and committed
(through a consumer of the group, as Kafka's own tools do), groups listed, described and deleted, and the ACL named
when a request is refused.
"""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_s3.core.errors import KafkaError
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.clients import SLICE, TIMED_OUT, TP, UNSTABLE_OFFSET_COMMIT, code_of, failure, quiet_settings
from kafka_s3.io.kafka.denied import GROUP_AUTHORIZATION_FAILED, denial, lacks

if TYPE_CHECKING:
    from confluent_kafka import Consumer


RESTORE_GROUP_PREFIX = "kafka-s3-restore-"
"""A restore's own groups (its progress on the target partitions, its lease) are named ``kafka-s3-restore-<name>-…``."""


def backup_commit(metadata: str) -> bool:
    """Whether committed-offset metadata is a kafka-s3 backup's: the JSON object its commits carry (the chunk, the
    store, the time and the topic id: ``PartitionState.commit_metadata``). A backup's group is named
    ``connect-<name>`` or by its ``group.id``, so what it commits tells it apart, not its name."""
    if not metadata.startswith("{"):
        return False
    try:
        doc = json.loads(metadata)
    except ValueError:
        return False
    return isinstance(doc, dict) and "chunk" in doc and "store" in doc


def kafka_s3_group(group: str, metadata: Iterable[str]) -> bool:
    """kafka-s3's own groups, which are not applications to snapshot or translate: every backup's (told by the
    ``metadata`` of its commits) and every restore's (by name)."""
    return group.startswith(RESTORE_GROUP_PREFIX) or any(backup_commit(m) for m in metadata)


class GroupState(NamedTuple):
    """A consumer group as its coordinator describes it."""

    members: int  # active now
    operations: frozenset[str] | None  # what this principal may do with it (None: the cluster does not say)
    denied: str = ""  # the ACL lacking to describe it ("": described)


class GroupOffsets(NamedTuple):
    """Consumer groups' committed offsets, the groups whose offsets were refused (group -> the ACL lacking), and the
    groups found to be kafka-s3's own (:func:`kafka_s3_group`: their offsets are no application's)."""

    offsets: dict[str, dict[TP, int]]
    refused: dict[str, str]
    own: set[str]


GROUP_OFFSET_REQUESTS = 64
"""Groups whose committed offsets are asked for at once (one request each: the admin API takes one group a call)."""


class GroupRequests(ABC):
    """Mixed into :class:`~kafka_s3.io.kafka.admin.Admin`, whose client, settings and first contact it uses."""

    settings: dict[str, str]
    timeout: float
    client: Any

    @abstractmethod
    def _contact(self) -> None:
        """Reach the cluster once (an unreachable one is an error naming it) before the first request."""

    def _group_consumer(self, group: str, stable: bool = True) -> Consumer:
        """A consumer of ``group`` that commits nothing; ``stable=False``: its offset reads leave out (and do not wait
        for) offsets an open transaction holds."""
        from confluent_kafka import Consumer

        settings = dict(self.settings)
        settings.update({"group.id": group, "enable.auto.commit": "false"})
        if not stable:
            settings["isolation.level"] = "read_uncommitted"  # librdkafka's OffsetFetch then does not require_stable
        return Consumer(quiet_settings(settings))

    def group_offsets(self, group: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        """Committed offsets of ``group`` (``None`` where nothing is committed)."""
        return {tp: offset for tp, (offset, _) in self.group_offsets_with_metadata(group, tps).items()}

    def group_offsets_with_metadata(
        self, group: str, tps: Iterable[TP], stable: bool = True
    ) -> dict[TP, tuple[int | None, str]]:
        """Committed offsets of ``group`` with the metadata string committed alongside. Offsets an open transaction
        holds make the read wait for it (``stable=False``: they are left out)."""
        from confluent_kafka import TopicPartition

        tps = list(tps)
        if not tps:
            return {}
        from confluent_kafka import KafkaException

        self._contact()
        consumer = self._group_consumer(group, stable)
        wanted = [TopicPartition(t, p) for t, p in tps]

        def attempt(remaining: float) -> list[TopicPartition]:
            deadline = time.monotonic() + remaining
            while True:  # in slices: librdkafka queues a refused coordinator lookup as an error event beside the call
                try:
                    found = consumer.committed(wanted, timeout=max(0.1, min(SLICE, deadline - time.monotonic())))
                    for tp in found:
                        if tp.error is not None:
                            raise KafkaException(tp.error)
                    return found
                except KafkaException as exc:
                    self._raise_denied(consumer, group, exc)
                    if code_of(exc) == TIMED_OUT and time.monotonic() < deadline:
                        continue
                    raise

        try:
            committed = retry.call(f"read committed offsets of group {group!r}", attempt, self.timeout)
        finally:
            consumer.close()
        return {
            (tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None, tp.metadata or "") for tp in committed
        }

    def pending_transactional_offsets(self, group: str, tps: Iterable[TP]) -> set[TP]:
        """Partitions of ``tps`` on which ``group`` has offsets sent inside a transaction still open (a producer killed
        mid-transaction leaves them until its timeout). Reading such a group ``read_committed`` waits for them (and
        times out); the admin API says so at once. A refusal or failure here says nothing: the read that follows
        reports it properly.

        The admin request goes through a client of its own, once a consumer of the group has read its offsets: the
        Admin's long-lived client keeps a group coordinator that librdkafka decommissioned while a broker restarted,
        and its coordinator requests then wait for it until their timeout, every time (librdkafka #5511; a following
        restore lost 30 s per group and cycle after a broker restart, silently); and an admin client whose request
        meets a coordinator still loading crashes the process (librdkafka #5040), where a consumer waits for it."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        tps = list(tps)
        if not tps:
            return set()
        self._contact()
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in tps])
        client = AdminClient(quiet_settings(self.settings))

        def attempt(remaining: float) -> list[TopicPartition]:
            timeout = min(self.timeout, remaining)
            futures = client.list_consumer_group_offsets([request], require_stable=True, request_timeout=timeout)
            return futures[group].result(timeout).topic_partitions or []

        try:
            self.group_offsets_with_metadata(group, tps, stable=False)  # the coordinator answers (or it is an error)
            listed = retry.call(f"list pending transactional offsets of group {group!r}", attempt, self.timeout)
        except KafkaError as exc:  # a refusal too
            logging.getLogger(__name__).debug("group %s: pending transactional offsets not listed: %s", group, exc)
            return set()
        return {
            (tp.topic, tp.partition)
            for tp in listed
            if tp.error is not None and tp.error.code() == UNSTABLE_OFFSET_COMMIT
        }

    def commit_group_offsets(
        self, group: str, offsets: Mapping[TP, int], metadata: Mapping[TP, str] | None = None
    ) -> None:
        """Commit ``offsets`` (next offset to read) for ``group`` synchronously, as a standalone consumer would;
        ``metadata`` strings are stored with them (shown by ``kafka-s3 status``)."""
        from confluent_kafka import TopicPartition

        if not offsets:
            return
        from confluent_kafka import KafkaException

        self._contact()
        metadata = metadata or {}
        consumer = self._group_consumer(group)

        def attempt(remaining: float) -> None:
            try:
                result = consumer.commit(
                    offsets=[
                        TopicPartition(t, p, o, metadata=metadata[(t, p)])
                        if (t, p) in metadata
                        else TopicPartition(t, p, o)
                        for (t, p), o in offsets.items()
                    ],
                    asynchronous=False,
                )
            except KafkaException as exc:
                self._raise_denied(consumer, group, exc)
                raise
            failed = [tp for tp in result or [] if tp.error is not None]
            again = [tp for tp in failed if retry.retriable(KafkaException(tp.error))]
            if again:
                raise KafkaException(again[0].error)
            if failed:
                raise KafkaError(
                    f"commit of group {group!r} offsets failed for "
                    + ", ".join(f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in failed)
                )

        try:
            retry.call(f"commit offsets of group {group!r}", attempt, self.timeout)
        finally:
            consumer.close()

    def _raise_denied(self, consumer: Consumer, group: str, exc: BaseException) -> None:
        """Raise the missing ACL when the failed group request, or an error event the group's consumer queued beside
        it (librdkafka reports a refused FindCoordinator there), is an authorization failure."""
        codes = [(code_of(exc), retry.describe(exc))]
        try:
            for message in consumer.consume(16, timeout=0):
                error = message.error()
                if error is not None:
                    codes.append((error.code(), error.str()))
        except Exception as drained:  # a closed or broken consumer: the request's own error is all there is
            logging.getLogger(__name__).debug("group %s: no queued errors: %s", group, drained)
        for code, text in codes:
            topic = re.search(r"topic '([^']+)'", text)
            needed = denial(code, self.settings, group=group, topic=topic.group(1) if topic else "")
            if needed:
                raise KafkaError(f"Kafka request for group {group!r} was refused: {needed} ({text})") from None

    def list_groups(self) -> list[str]:
        """Every consumer group the cluster knows, sorted."""
        self._contact()
        try:
            result = self.client.list_consumer_groups(request_timeout=self.timeout).result(self.timeout)
        except Exception as exc:
            raise failure("list consumer groups", exc) from None
        return sorted(g.group_id for g in result.valid)

    def groups_on_topics(self, groups: Iterable[str], topics: Iterable[str]) -> GroupOffsets:
        """Committed offsets of each of ``groups`` on partitions of ``topics`` (groups without any are absent, and so
        are kafka-s3's own: other backups' and restores' groups, :func:`kafka_s3_group`); groups whose offsets the
        cluster refused to show (no DESCRIBE on them) are named in ``refused`` with the ACL, kafka-s3's own in
        ``own``. The requests go :data:`GROUP_OFFSET_REQUESTS` at a time."""
        wanted = set(topics)
        out = GroupOffsets({}, {}, set())
        groups = list(groups)
        for first in range(0, len(groups), GROUP_OFFSET_REQUESTS):
            self._offsets_of(groups[first : first + GROUP_OFFSET_REQUESTS], wanted, out)
        return out

    def _offsets_of(self, groups: list[str], wanted: set[str], out: GroupOffsets) -> None:
        """:meth:`groups_on_topics` for a few groups, their requests sent at once (one round trip, not one a group)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        def ask(group: str) -> Any:
            try:
                return self.client.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout
                )[group]
            except Exception as exc:
                raise failure(f"list committed offsets of group {group!r}", exc) from None

        futures = [(group, ask(group)) for group in groups]
        for group, future in futures:
            try:
                listed = future.result(self.timeout).topic_partitions or []
            except Exception as exc:
                if code_of(exc) == GROUP_AUTHORIZATION_FAILED:
                    out.refused[group] = lacks(self.settings, "DESCRIBE", "group", group)
                    continue
                raise failure(f"list committed offsets of group {group!r}", exc) from None
            if kafka_s3_group(group, (tp.metadata or "" for tp in listed)):
                logging.getLogger(__name__).debug("group %s is kafka-s3's own: not an application's", group)
                out.own.add(group)
                continue
            offsets = {(tp.topic, tp.partition): tp.offset for tp in listed if tp.topic in wanted and tp.offset >= 0}
            if offsets:
                out.offsets[group] = offsets

    def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupState]:
        """Each of ``groups`` as its coordinator describes it: members now and what this principal may do with it; a
        group this principal may not DESCRIBE says so in ``denied`` (the ACL lacking)."""
        groups = sorted(set(groups))
        if not groups:
            return {}
        self._contact()
        out: dict[str, GroupState] = {}
        try:
            futures = self.client.describe_consumer_groups(
                groups, include_authorized_operations=True, request_timeout=self.timeout
            )
            for group, future in futures.items():
                try:
                    described = future.result(self.timeout)
                except Exception as exc:
                    if code_of(exc) == GROUP_AUTHORIZATION_FAILED:
                        out[group] = GroupState(0, None, lacks(self.settings, "DESCRIBE", "group", group))
                        continue
                    raise
                operations = described.authorized_operations
                out[group] = GroupState(
                    len(described.members or []),
                    None if operations is None else frozenset(op.name for op in operations),
                )
        except Exception as exc:
            raise failure(f"describe consumer groups {', '.join(groups)}", exc) from None
        return out

    def delete_group(self, group: str) -> None:
        def attempt(remaining: float) -> None:
            timeout = min(self.timeout, remaining)
            self.client.delete_consumer_groups([group], request_timeout=timeout)[group].result(timeout)

        retry.call(f"delete consumer group {group!r}", attempt, self.timeout)
