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
from typing import TYPE_CHECKING, Any

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.clients import (
    DEFAULT_TIMEOUT,
    SLICE,
    TP,
    code_of,
    failure,
    holding_records,
    quiet_settings,
)
from kafka_s3.io.kafka.denied import (
    AUTHENTICATION,
    SSL,
    TOPIC_AUTHORIZATION_FAILED,
    connection_failure,
    lacks,
)
from kafka_s3.io.kafka.groups import GroupRequests

if TYPE_CHECKING:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin._listoffsets import OffsetSpec

    from kafka_s3.core.config.model import Config


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


class Admin(GroupRequests):
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

    @classmethod
    def for_config(cls, config: Config) -> Admin:
        """The admin client of a command's configuration: its ``admin.*`` settings, waiting ``service.timeout.ms`` for
        the cluster's first answer."""
        from kafka_s3.io.kafka.settings import client_settings

        return cls(client_settings(config, "admin", warn=False), connect_timeout=config["service.timeout.ms"] / 1000)

    def _contact(self) -> None:
        """The first request of this client waits at most ``connect_timeout`` seconds: an unreachable cluster, or one
        refusing the credentials, is an error naming the bootstrap servers and librdkafka's first error."""
        if self._reached:
            return
        servers = self.settings.get("bootstrap.servers")
        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                self.client.list_topics(timeout=max(0.1, min(SLICE, deadline - time.monotonic())))
                break
            except Exception as exc:
                self.client.poll(0)  # serves error_cb: the underlying cause
                if self._errors.final is not None:  # a refused login or certificate: waiting longer cannot help
                    code, text = self._errors.final
                    raise KafkaError(connection_failure(code, text, self.settings) or text) from None
                if time.monotonic() < deadline:
                    continue
                detail = retry.describe(exc)
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
            if code_of(exc) == TOPIC_AUTHORIZATION_FAILED:
                refused = ", ".join(names)
                raise KafkaAuthorizationError(
                    f"Kafka describe configs of topic(s) {refused} was refused: "
                    f"{lacks(self.settings, 'DESCRIBE_CONFIGS', 'topic', refused)}"
                ) from None
            raise failure(f"describe configs of topic(s) {', '.join(names)}", exc) from None
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
            if code_of(exc) == TOPIC_AUTHORIZATION_FAILED:
                raise KafkaAuthorizationError(
                    f"Kafka metadata of topic {topic!r} was refused: "
                    f"{lacks(self.settings, 'DESCRIBE', 'topic', topic)} ({why})"
                ) from None
            logging.getLogger(__name__).debug("topic %s not described: %s", topic, exc)
