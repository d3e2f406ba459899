"""Cluster-level Kafka operations the driver needs: topics, offsets, consumer-group positions.

All calls are synchronous with a timeout, retry retriable errors (a coordinator loading or moved, a leader being
elected: :mod:`kafka_s3.io.kafka.retry`) within it, and turn librdkafka failures into
:class:`~kafka_s3.core.errors.KafkaError` naming the operation and the topic/partition/group involved.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.denied import (
    AUTHENTICATION,
    GROUP_AUTHORIZATION_FAILED,
    SSL,
    TOPIC_AUTHORIZATION_FAILED,
    connection_failure,
    denial,
    lacks,
)

if TYPE_CHECKING:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin._listoffsets import OffsetSpec

TP = tuple[str, int]


class GroupState(NamedTuple):
    """A consumer group as its coordinator describes it."""

    members: int  # active now
    operations: frozenset[str] | None  # what this principal may do with it (None: the cluster does not say)
    denied: str = ""  # the ACL lacking to describe it ("": described)


class GroupOffsets(NamedTuple):
    """Consumer groups' committed offsets, and the groups whose offsets were refused (group -> the ACL lacking)."""

    offsets: dict[str, dict[TP, int]]
    refused: dict[str, str]


DEFAULT_TIMEOUT = 30.0
# A request that may wait long is sent in slices this long, so that a refused login, an unverifiable certificate or a
# missing ACL (reported beside the request, not by it) ends it within seconds instead of at its timeout.
_SLICE = 1.0


class _DebugLog:
    """Receives librdkafka's own log lines (``logger`` client setting) and keeps them at debug level: against an
    unreachable broker librdkafka logs a line per connection attempt, every few milliseconds, which buried the one
    error that matters — the failed operation, raised as a :class:`KafkaError` naming the broker."""

    _log = logging.getLogger("kafka_s3.kafka.librdkafka")

    def log(self, level: int, fmt: str, *args: object) -> None:
        self._log.debug(fmt, *args)


def quiet_settings(settings: Mapping[str, str]) -> dict[str, Any]:
    """Client settings whose librdkafka log lines go to the debug log (:class:`_DebugLog`)."""
    return {**settings, "logger": _DebugLog()}


class _FirstError:
    """librdkafka's ``error_cb``: keeps the first error it reports (connection refused, unknown host, refused
    credentials...), the cause a failed request's own "Broker transport failure" hides; and the first refused login
    or TLS failure, which no retry will cure."""

    def __init__(self) -> None:
        self.first: str | None = None
        self.final: tuple[int, str] | None = None

    def __call__(self, error: Any) -> None:
        text = str(error.str() if hasattr(error, "str") else error)
        if self.first is None:
            self.first = text
        code = error.code() if hasattr(error, "code") else None
        if self.final is None and code in (AUTHENTICATION, SSL):
            self.final = (code, text)


_text = retry.describe


_TIMED_OUT = -185  # librdkafka's local timeout
UNSTABLE_OFFSET_COMMIT = 88  # a group's offsets held by an open transaction


def _code(exc: BaseException) -> int | None:
    detail = exc.args[0] if getattr(exc, "args", None) else None
    code = getattr(detail, "code", None)
    return code() if callable(code) else None


def _error(operation: str, exc: BaseException) -> KafkaError:
    return KafkaError(f"Kafka {operation} failed: {_text(exc)}")


class Admin:
    """A thin, synchronous facade over confluent-kafka's AdminClient (and a consumer for group commits)."""

    def __init__(
        self, settings: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT, connect_timeout: float | None = None
    ):
        from confluent_kafka.admin import AdminClient

        self.settings = dict(settings)
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self._errors = _FirstError()
        client_conf: dict[str, Any] = {**quiet_settings(self.settings), "error_cb": self._errors}
        self.client = AdminClient(client_conf)
        self._reached = False

    def _contact(self) -> None:
        """The first request of this client waits at most ``connect_timeout`` seconds: an unreachable cluster, or one
        refusing the credentials, is an error naming the bootstrap servers and librdkafka's first error."""
        if self._reached:
            return
        servers = self.settings.get("bootstrap.servers")
        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                self.client.list_topics(timeout=max(0.1, min(_SLICE, deadline - time.monotonic())))
                break
            except Exception as exc:
                self.client.poll(0)  # serves error_cb: the underlying cause
                if self._errors.final is not None:  # a refused login or certificate: waiting longer cannot help
                    code, text = self._errors.final
                    raise KafkaError(connection_failure(code, text, self.settings) or text) from None
                if time.monotonic() < deadline:
                    continue
                detail = _text(exc)
                cause = f"{self._errors.first} ({detail})" if self._errors.first else detail
                raise KafkaError(
                    f"cannot reach the Kafka cluster at {servers} within {self.connect_timeout:g} s "
                    f"(service.timeout.ms): {cause}"
                ) from None
        self._reached = True

    # ------------------------------------------------------------------------------------------------- topics
    def topics(self) -> dict[str, int]:
        """Every non-internal topic and its partition count."""
        from confluent_kafka import KafkaException

        self._contact()
        grace = time.monotonic() + retry.UNKNOWN_TOPIC_GRACE
        while True:
            metadata = self._metadata()
            # A topic just created reports LEADER_NOT_AVAILABLE until its leader is elected: asked again shortly.
            pending = [
                t
                for name, t in metadata.topics.items()
                if not name.startswith("__") and t.error is not None and retry.retriable(KafkaException(t.error))
            ]
            if not pending or time.monotonic() > grace:
                break
            time.sleep(0.2)
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if not name.startswith("__") and topic.error is None
        }

    def _metadata(self) -> Any:
        return retry.call(
            f"metadata request to {self.settings.get('bootstrap.servers')}",
            lambda remaining: self.client.list_topics(timeout=min(self.timeout, remaining)),
            self.timeout,
        )

    def cluster_id(self) -> str:
        """The cluster's id ("" when the broker gives none)."""
        self._contact()
        return str(self._metadata().cluster_id or "")

    def topic_ids(self, names: Iterable[str]) -> dict[str, str]:
        """Each topic's id, which changes when a topic is deleted and re-created ("" where the broker has no ids)."""
        from confluent_kafka import TopicCollection

        names = sorted(set(names))
        if not names:
            return {}
        out = dict.fromkeys(names, "")

        def attempt(remaining: float) -> dict[str, Any]:
            timeout = min(self.timeout, remaining)
            futures = self.client.describe_topics(TopicCollection(names), request_timeout=timeout)
            return {name: future.result().topic_id for name, future in futures.items()}

        try:
            ids = retry.call("describe topics", attempt, self.timeout)
        except KafkaError as exc:
            logging.getLogger(__name__).debug("topic ids unavailable: %s", exc)
            return out
        for name, topic_id in ids.items():
            text = str(topic_id) if topic_id is not None else ""
            out[name] = "" if set(text) <= {"A", "=", "0", "-"} else text  # all-zero id: the broker has none
        return out

    def select_topics(self, names: Iterable[str] = (), regex: str = "") -> dict[str, int]:
        """Topics named explicitly (which must exist) or matching ``regex`` (full match, as Connect's topics.regex)."""
        existing = self.topics()
        if regex:
            pattern = re.compile(regex)
            return {t: n for t, n in sorted(existing.items()) if pattern.fullmatch(t)}
        missing = [t for t in names if t not in existing]
        if missing:
            hidden = (
                f" (or {lacks(self.settings, 'DESCRIBE', 'topic', missing[0])}: a topic is invisible without it)"
                if self.settings.get("sasl.username")
                else ""
            )
            raise KafkaError(f"topic(s) not found in the Kafka cluster: {', '.join(missing)}{hidden}")
        return {t: existing[t] for t in names}

    def create_topic(
        self, name: str, partitions: int, replication_factor: int = -1, config: Mapping[str, str] | None = None
    ) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]  # re-exported without __all__

        tries = 0

        def attempt(remaining: float) -> None:
            nonlocal tries
            tries += 1
            timeout = min(self.timeout, remaining)
            topic = NewTopic(name, partitions, replication_factor, config=dict(config or {}))
            futures = self.client.create_topics([topic], operation_timeout=timeout)
            try:
                futures[name].result(timeout)
            except Exception as exc:
                error = retry.error_of(exc)
                # a retried request whose first attempt did create it, though its answer was lost
                if tries > 1 and error is not None and error.code() == 36:  # TOPIC_ALREADY_EXISTS
                    return
                raise

        retry.call(f"create topic {name!r} with {partitions} partitions", attempt, self.timeout)

    def topic_configs(self, names: Iterable[str], only_own: bool = True) -> dict[str, dict[str, str]]:
        """Each topic's configs: only those set on the topic itself (``only_own``), or all; sensitive ones never."""
        from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType  # type: ignore[attr-defined]

        names = sorted(set(names))
        if not names:
            return {}
        self._contact()
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        out: dict[str, dict[str, str]] = {}
        try:
            futures = self.client.describe_configs(resources, request_timeout=self.timeout)
            for resource, future in futures.items():
                entries = future.result(self.timeout)
                out[resource.name] = {
                    key: str(entry.value)
                    for key, entry in sorted(entries.items())
                    if entry.value is not None
                    and not entry.is_sensitive
                    and (not only_own or entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                }
        except Exception as exc:
            if _code(exc) == TOPIC_AUTHORIZATION_FAILED:
                refused = ", ".join(names)
                raise KafkaAuthorizationError(
                    f"Kafka describe configs of topic(s) {refused} was refused: "
                    f"{lacks(self.settings, 'DESCRIBE_CONFIGS', 'topic', refused)}"
                ) from None
            raise _error(f"describe configs of topic(s) {', '.join(names)}", exc) from None
        return out

    def delete_topic(self, name: str) -> None:
        def attempt(remaining: float) -> None:
            timeout = min(self.timeout, remaining)
            self.client.delete_topics([name], operation_timeout=timeout)[name].result(timeout)

        retry.call(f"delete topic {name!r}", attempt, self.timeout, unknown_topic_grace=0)

    # ------------------------------------------------------------------------------------------------- offsets
    def _list_offsets(self, specs: dict[TopicPartition, OffsetSpec], read_committed: bool) -> dict[TP, tuple[int, int]]:
        from confluent_kafka import IsolationLevel

        if not specs:
            return {}
        self._contact()
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED

        def attempt(remaining: float) -> dict[TP, tuple[int, int]]:
            timeout = min(self.timeout, remaining)
            futures = self.client.list_offsets(specs, isolation_level=level, request_timeout=timeout)
            return {(tp.topic, tp.partition): (f.result().offset, f.result().timestamp) for tp, f in futures.items()}

        where = ", ".join(sorted({f"{tp.topic}[{tp.partition}]" for tp in specs})[:5])
        more = f" and {len(specs) - 5} more" if len(specs) > 5 else ""
        return retry.call(f"list offsets of {where}{more}", attempt, self.timeout)

    def end_offsets(self, tps: Iterable[TP], read_committed: bool = True) -> dict[TP, int]:
        """High watermarks (the last stable offset under read_committed)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # re-exported without __all__

        specs = {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}  # type: ignore[no-untyped-call]  # unannotated in confluent_kafka
        return {tp: offset for tp, (offset, _) in self._list_offsets(specs, read_committed).items()}

    def start_offsets(self, tps: Iterable[TP]) -> dict[TP, int]:
        """Log start offsets (the earliest record still retained)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # re-exported without __all__

        specs = {TopicPartition(t, p): OffsetSpec.earliest() for t, p in tps}  # type: ignore[no-untyped-call]  # unannotated in confluent_kafka
        return {tp: offset for tp, (offset, _) in self._list_offsets(specs, False).items()}

    def offsets_for_times(self, tps: Iterable[TP], timestamp_ms: int) -> dict[TP, int]:
        """The first offset whose timestamp is >= ``timestamp_ms`` per partition (the end offset when none is)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # re-exported without __all__

        tps = list(tps)
        specs = {TopicPartition(t, p): OffsetSpec.for_timestamp(timestamp_ms) for t, p in tps}
        found = {tp: offset for tp, (offset, _) in self._list_offsets(specs, False).items()}
        ends = self.end_offsets([tp for tp in tps if found.get(tp, -1) < 0], read_committed=False)
        return {tp: (found[tp] if found.get(tp, -1) >= 0 else ends[tp]) for tp in tps}

    def holding_records(self, tps: Iterable[TP], group: str) -> set[TP]:
        """The partitions of ``tps`` a reader sees at least one record in (:func:`holding_records`)."""
        tps = list(tps)
        if not tps:
            return set()
        self._contact()
        return holding_records(self.settings, tps, group, self.timeout)

    # ------------------------------------------------------------------------------------------------- groups
    def _group_consumer(self, group: str) -> Consumer:
        from confluent_kafka import Consumer

        settings = dict(self.settings)
        settings.update({"group.id": group, "enable.auto.commit": "false"})
        return Consumer(quiet_settings(settings))

    def group_offsets(self, group: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        """Committed offsets of ``group`` (``None`` where nothing is committed)."""
        return {tp: offset for tp, (offset, _) in self.group_offsets_with_metadata(group, tps).items()}

    def group_offsets_with_metadata(self, group: str, tps: Iterable[TP]) -> dict[TP, tuple[int | None, str]]:
        """Committed offsets of ``group`` with the metadata string committed alongside."""
        from confluent_kafka import TopicPartition

        tps = list(tps)
        if not tps:
            return {}
        from confluent_kafka import KafkaException

        self._contact()
        consumer = self._group_consumer(group)
        wanted = [TopicPartition(t, p) for t, p in tps]

        def attempt(remaining: float) -> list[TopicPartition]:
            deadline = time.monotonic() + remaining
            while True:  # in slices: librdkafka queues a refused coordinator lookup as an error event beside the call
                try:
                    found = consumer.committed(wanted, timeout=max(0.1, min(_SLICE, deadline - time.monotonic())))
                    for tp in found:
                        if tp.error is not None:
                            raise KafkaException(tp.error)
                    return found
                except KafkaException as exc:
                    self._raise_denied(consumer, group, exc)
                    if _code(exc) == _TIMED_OUT and time.monotonic() < deadline:
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
        reports it properly."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        tps = list(tps)
        if not tps:
            return set()
        self._contact()
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in tps])
        try:
            futures = self.client.list_consumer_group_offsets(
                [request], require_stable=True, request_timeout=self.timeout
            )
            listed = futures[group].result(self.timeout).topic_partitions or []
        except Exception:
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
        codes = [(_code(exc), _text(exc))]
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
            raise _error("list consumer groups", exc) from None
        return sorted(g.group_id for g in result.valid)

    def groups_on_topics(self, groups: Iterable[str], topics: Iterable[str]) -> GroupOffsets:
        """Committed offsets of each of ``groups`` on partitions of ``topics`` (groups without any are absent); groups
        whose offsets the cluster refused to show (no DESCRIBE on them) are named in ``refused`` with the ACL."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        wanted = set(topics)
        out = GroupOffsets({}, {})
        for group in groups:
            try:
                futures = self.client.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout
                )
                listed = futures[group].result(self.timeout).topic_partitions or []
            except Exception as exc:
                if _code(exc) == GROUP_AUTHORIZATION_FAILED:
                    out.refused[group] = lacks(self.settings, "DESCRIBE", "group", group)
                    continue
                raise _error(f"list committed offsets of group {group!r}", exc) from None
            offsets = {(tp.topic, tp.partition): tp.offset for tp in listed if tp.topic in wanted and tp.offset >= 0}
            if offsets:
                out.offsets[group] = offsets
        return out

    def cluster_operations(self) -> frozenset[str] | None:
        """The operations this client's principal may do on the cluster (``DESCRIBE``, ``CREATE``...; Kafka's
        authorized operations), ``None`` when the cluster does not say (Apache Kafka says nothing to a principal
        without DESCRIBE on the cluster; a server without ACLs, nothing to anyone)."""
        self._contact()
        try:
            cluster = self.client.describe_cluster(
                include_authorized_operations=True, request_timeout=self.timeout
            ).result(self.timeout)
        except Exception as exc:  # a Kafka-protocol server without DescribeCluster: it has no ACLs to report either
            logging.getLogger(__name__).debug("cluster authorized operations unavailable: %s", exc)
            return None
        operations = cluster.authorized_operations
        return None if operations is None else frozenset(op.name for op in operations)

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
                    if _code(exc) == GROUP_AUTHORIZATION_FAILED:
                        out[group] = GroupState(0, None, lacks(self.settings, "DESCRIBE", "group", group))
                        continue
                    raise
                operations = described.authorized_operations
                out[group] = GroupState(
                    len(described.members or []),
                    None if operations is None else frozenset(op.name for op in operations),
                )
        except Exception as exc:
            raise _error(f"describe consumer groups {', '.join(groups)}", exc) from None
        return out

    def require_describe(self, topic: str, why: str) -> None:
        """A :class:`KafkaAuthorizationError` naming the ACL when this principal may not DESCRIBE ``topic`` (a topic
        it cannot describe is missing from every listing, as if it did not exist); nothing when it may, or when the
        topic does not exist."""
        from confluent_kafka import TopicCollection

        self._contact()
        try:
            self.client.describe_topics(TopicCollection([topic]), request_timeout=self.timeout)[topic].result(
                self.timeout
            )
        except Exception as exc:
            if _code(exc) == TOPIC_AUTHORIZATION_FAILED:
                raise KafkaAuthorizationError(
                    f"Kafka metadata of topic {topic!r} was refused: "
                    f"{lacks(self.settings, 'DESCRIBE', 'topic', topic)} ({why})"
                ) from None
            logging.getLogger(__name__).debug("topic %s not described: %s", topic, exc)

    def delete_group(self, group: str) -> None:
        def attempt(remaining: float) -> None:
            timeout = min(self.timeout, remaining)
            self.client.delete_consumer_groups([group], request_timeout=timeout)[group].result(timeout)

        retry.call(f"delete consumer group {group!r}", attempt, self.timeout)


def holding_records(
    settings: Mapping[str, str], tps: Iterable[TP], group: str, timeout: float = DEFAULT_TIMEOUT
) -> set[TP]:
    """The partitions of ``tps`` in which a ``read_committed`` reader sees at least one record. A high watermark
    above 0 does not say it: aborted transactions (a restore killed before its first commit) leave offsets behind
    and no record. One consumer (of ``group``, which commits nothing) reads from each partition's start until its
    first record or its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
    from confluent_kafka import KafkaError as RdKafkaError

    pending = set(tps)
    if not pending:
        return set()
    consumer = Consumer(
        quiet_settings(
            {
                **settings,
                "group.id": group,
                "enable.auto.commit": "false",
                "enable.partition.eof": "true",
                "isolation.level": "read_committed",
            }
        )
    )
    found: set[TP] = set()
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in sorted(pending)])
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                where = ", ".join(f"{t}[{p}]" for t, p in sorted(pending))
                raise KafkaError(f"Kafka read of the first record of {where} timed out after {timeout:g} s")
            for message in consumer.consume(num_messages=len(pending), timeout=_SLICE):
                tp: TP = (str(message.topic()), int(message.partition() or 0))
                error = message.error()
                if error is not None and error.code() != RdKafkaError._PARTITION_EOF:
                    raise KafkaError(f"Kafka read of {tp[0]}[{tp[1]}] failed: {error.str()}")
                if error is None:
                    found.add(tp)
                pending.discard(tp)
    except KafkaException as exc:
        raise _error("read of the first records", exc) from None
    finally:
        consumer.close()
    return found
