"""The options of ``spark.read.format("kafka-s3")``: Spark's Kafka-source names with Spark's meaning, kafka-s3's own,
and every configuration property — parsed and checked on the driver before any task runs.

Spark's Kafka source options that apply to a backup (``subscribe``, ``subscribePattern``, ``assign``,
``startingOffsets``/``endingOffsets``, ``startingTimestamp``/``endingTimestamp``,
``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp``, ``includeHeaders``, ``failOnDataLoss``) mean what they
mean there; the ones that cannot apply (Kafka client settings, streaming rates, ``minPartitions``) are refused with
the reason, and any other unknown name is refused with a did-you-mean. Options naming the same thing twice
(``subscribe`` with ``assign``, ``startingOffsets`` with ``startingTimestamp``...) are errors rather than one of them
silently winning. :func:`resolve` then checks the parsed options against what the backup holds.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.options import Bounds, parse_offsets, parse_time

TP = tuple[str, int]

EARLIEST, LATEST = -2, -1  # Spark's per-partition JSON offsets for the ends of a partition

CONFIG = "config"
PATH = "path"
TOPICS = "topics"
FROM_OFFSET = "from.offset"
UNTIL_OFFSET = "until.offset"
ALLOW_GAPS = "allow.gaps"
PUSHDOWN = "pushdown"

#: Spark's Kafka-source options honoured, by their lower-case name (Spark's options are case-insensitive)
KAFKA_SOURCE = {
    name.lower(): name
    for name in (
        "subscribe",
        "subscribePattern",
        "assign",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "includeHeaders",
        "failOnDataLoss",
    )
}
OWN = (CONFIG, PATH, TOPICS, FROM_OFFSET, UNTIL_OFFSET, ALLOW_GAPS, PUSHDOWN)

_CONSUMER = "a Kafka consumer setting: a backup is read from the object store, not consumed from Kafka"
_STREAMING = "a streaming option: spark.read.format('kafka-s3') reads a backup as one batch"
#: Spark's Kafka-source options that do not apply to a backup, and why
NOT_APPLICABLE = {
    name.lower(): (name, why)
    for name, why in (
        ("minPartitions", "the reader plans one Spark partition per backed-up topic-partition"),
        ("maxRecordsPerPartition", "the reader plans one Spark partition per backed-up topic-partition"),
        ("maxOffsetsPerTrigger", _STREAMING),
        ("minOffsetsPerTrigger", _STREAMING),
        ("maxTriggerDelay", _STREAMING),
        ("groupIdPrefix", _CONSUMER),
        ("kafkaConsumer.pollTimeoutMs", _CONSUMER),
        ("fetchOffset.numRetries", _CONSUMER),
        ("fetchOffset.retryIntervalMs", _CONSUMER),
        (
            "startingOffsetsByTimestampStrategy",
            "a time after a partition's last backed-up record selects none of its records (no 'latest' to fall "
            "back on in a backup)",
        ),
    )
}

_STARTS = ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp", FROM_OFFSET)
_ENDS = ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp", UNTIL_OFFSET)
_SELECTIONS = ("subscribe", "subscribepattern", "assign")  # Spark's: one of them (a configuration's topics give way)


def _shown(name: str) -> str:
    return KAFKA_SOURCE.get(name, name)


@dataclass(frozen=True)
class Ends:
    """One end of the read, as one option gave it: every partition at its earliest/latest (``whole``), one time for
    every partition, or a value per topic-partition (offsets with -2/-1 for earliest/latest, or times)."""

    option: str = ""  # the option's name as Spark spells it ("" when none was given)
    whole: bool = True
    time: int | None = None  # epoch ms, for every partition
    per_partition: dict[TP, int] = field(default_factory=dict)  # offsets or times (epoch ms)
    by_time: bool = False  # per_partition holds times
    restore_style: dict[tuple[str | None, int], int] = field(default_factory=dict)  # from.offset/until.offset


@dataclass(frozen=True)
class ReaderOptions:
    """What ``spark.read.format("kafka-s3")`` was asked for, parsed and checked for contradictions."""

    properties: dict[str, str]  # configuration properties given as options (not yet merged with a config file)
    config_file: str | None = None
    path: str | None = None
    topics: tuple[str, ...] | None = None  # subscribe / topics
    topic_option: str = ""  # which option named them
    pattern: str | None = None  # subscribePattern (a regular expression on the whole topic name)
    assign: dict[str, tuple[int, ...]] | None = None
    starting: Ends = field(default_factory=Ends)
    ending: Ends = field(default_factory=Ends)
    include_headers: bool = True
    allow_gaps: bool = False
    pushdown: bool | None = None  # None: not given (on where Spark keeps read plans per query)

    @property
    def selects(self) -> bool:
        return self.topics is not None or self.pattern is not None or self.assign is not None


def known_names(config_keys: Iterable[str]) -> list[str]:
    """Every option name the reader takes, as users spell them (for did-you-mean)."""
    return [*OWN, *KAFKA_SOURCE.values(), *config_keys]


def _suggest(name: str, known: list[str]) -> str:
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.8)
    return f" (did you mean '{by_lower[close[0]]}'?)" if close else ""


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in options:
        return default
    value = options[name].strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{_shown(name)}: expected true or false, got {options[name]!r}", key=_shown(name))
    return value == "true"


def _json(options: Mapping[str, str], name: str, example: str) -> object:
    try:
        return json.loads(options[name])
    except ValueError:
        raise ConfigError(
            f"{_shown(name)}: not JSON: {options[name]!r} (expected like {example})", key=_shown(name)
        ) from None


def _per_partition(options: Mapping[str, str], name: str) -> dict[TP, int]:
    """``{"topic": {"0": value, ...}, ...}`` as Spark's startingOffsets/…ByTimestamp JSON."""
    example = '{"orders":{"0":23,"1":-2}}'
    doc = _json(options, name, example)
    out: dict[TP, int] = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{_shown(name)}: expected a JSON object like {example}", key=_shown(name))
    for topic, partitions in doc.items():
        if not isinstance(partitions, dict):
            raise ConfigError(f"{_shown(name)}: {topic!r} maps to {partitions!r}, not an object", key=_shown(name))
        for partition, value in partitions.items():
            if not str(partition).isdigit() or not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(
                    f"{_shown(name)}: {topic}[{partition}]: expected a partition number and an integer, got "
                    f"{partition!r}: {value!r}",
                    key=_shown(name),
                )
            out[(topic, int(partition))] = value
    return out


def _offsets(options: Mapping[str, str], name: str, starting: bool) -> Ends:
    text = options[name].strip()
    forbidden, end_word = ("latest", "starting") if starting else ("earliest", "ending")
    if text.lower() in ("earliest", "latest"):
        if text.lower() == forbidden:
            raise ConfigError(
                f"{_shown(name)}={text}: {end_word} offsets cannot be {forbidden} for a batch read (as with Spark's "
                "Kafka source)",
                key=_shown(name),
            )
        return Ends(_shown(name))
    offsets = _per_partition(options, name)
    wrong, why = (
        (LATEST, "-1 (latest) cannot start a batch read") if starting else (EARLIEST, "-2 (earliest) cannot end one")
    )
    for (topic, partition), offset in offsets.items():
        if offset == wrong or offset < EARLIEST:
            raise ConfigError(
                f"{_shown(name)}: {topic}[{partition}]: {offset} is not an offset here (offsets are 0 or more, -2 "
                f"earliest, -1 latest; {why})",
                key=_shown(name),
            )
    return Ends(_shown(name), whole=False, per_partition=offsets)


def _one_of(options: Mapping[str, str], names: tuple[str, ...], what: str) -> str | None:
    given = [n for n in names if n in options]
    if len(given) > 1:
        raise ConfigError(
            f"{' and '.join(_shown(n) for n in given)} both give {what}: give one of them", key=_shown(given[1])
        )
    return given[0] if given else None


def _ends(options: Mapping[str, str], starting: bool) -> Ends:
    names = _STARTS if starting else _ENDS
    name = _one_of(options, names, "where the read starts" if starting else "where the read ends")
    if name is None:
        return Ends()
    if name in (FROM_OFFSET, UNTIL_OFFSET):
        return Ends(name, whole=False, restore_style=parse_offsets(options[name], name))
    if name.endswith("bytimestamp"):
        times = _per_partition(options, name)
        return Ends(_shown(name), whole=False, per_partition=times, by_time=True)
    if name.endswith("timestamp"):
        return Ends(_shown(name), whole=False, time=parse_time(options[name], _shown(name)))
    return _offsets(options, name, starting)


def _assign(options: Mapping[str, str]) -> dict[str, tuple[int, ...]]:
    example = '{"orders":[0,1]}'
    doc = _json(options, "assign", example)
    if not isinstance(doc, dict) or not all(
        isinstance(ps, list) and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in ps)
        for ps in doc.values()
    ):
        raise ConfigError(f"assign: expected a JSON object of topics and partition lists like {example}", key="assign")
    return {str(topic): tuple(sorted(set(ps))) for topic, ps in doc.items()}


def parse(options: Mapping[str, str], config_keys: Iterable[str], passthrough: tuple[str, ...] = ()) -> ReaderOptions:
    """``options`` (names in any case) as the reader's options; ``config_keys`` are the configuration properties
    (and their aliases) every option may also be, ``passthrough`` the prefixes of properties handed on as they are
    (converter settings...)."""
    lowered = {name.lower(): value for name, value in options.items()}
    keys = list(config_keys)
    known_config = {k.lower() for k in keys}
    properties: dict[str, str] = {}
    for name, value in lowered.items():
        if name in OWN or name in KAFKA_SOURCE:
            continue
        if name in known_config or any(name.startswith(prefix) for prefix in passthrough):
            properties[name] = value
            continue
        if name in NOT_APPLICABLE:
            shown, why = NOT_APPLICABLE[name]
            raise ConfigError(f"option {shown} does not apply to a backup: {why}", key=shown)
        if name.startswith("kafka."):
            raise ConfigError(
                f"option {name} does not apply to a backup: {_CONSUMER} (spark.read.format('kafka-s3-topic') reads "
                "the topic itself)",
                key=name,
            )
        raise ConfigError(
            f"unknown option {name!r} of spark.read.format('kafka-s3'){_suggest(name, known_names(keys))}", key=name
        )
    selection = _one_of(lowered, _SELECTIONS, "the topics to read") or (TOPICS if TOPICS in lowered else None)
    topics = pattern = assign = None
    if selection in ("subscribe", TOPICS):
        topics = tuple(dict.fromkeys(t.strip() for t in lowered[selection].split(",") if t.strip()))
        if not topics:
            raise ConfigError(f"{_shown(selection)}: no topic named", key=_shown(selection))
    elif selection == "subscribepattern":
        pattern = lowered[selection]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"subscribePattern: not a regular expression: {pattern!r} ({exc})", key="subscribePattern"
            ) from None
    elif selection == "assign":
        assign = _assign(lowered)
    gaps = _flag(lowered, ALLOW_GAPS, False)
    if "failondataloss" in lowered:
        fail = _flag(lowered, "failondataloss", True)
        if ALLOW_GAPS in lowered and fail == gaps:
            raise ConfigError(
                f"failOnDataLoss={str(fail).lower()} and allow.gaps={str(gaps).lower()} contradict each other "
                "(failOnDataLoss=false is allow.gaps=true): give one of them",
                key="failOnDataLoss",
            )
        gaps = not fail
    return ReaderOptions(
        properties=properties,
        config_file=lowered.get(CONFIG),
        path=lowered.get(PATH),
        topics=topics,
        topic_option=_shown(selection) if selection in ("subscribe", TOPICS) else "",
        pattern=pattern,
        assign=assign,
        starting=_ends(lowered, True),
        ending=_ends(lowered, False),
        include_headers=_flag(lowered, "includeheaders", True),
        allow_gaps=gaps,
        pushdown=_flag(lowered, PUSHDOWN, False) if PUSHDOWN in lowered else None,
    )


def _listed(held: Iterable[str]) -> str:
    names = sorted(held)
    return ", ".join(names) if names else "nothing"


def selected_topics(options: ReaderOptions, configured: list[str] | None) -> list[str] | None:
    """The topics to list, before the backup is looked at (``None``: every topic); ``configured`` are the
    ``topics`` of a configuration file, read when no option selects."""
    if options.topics is not None:
        return list(options.topics)
    if options.assign is not None:
        return sorted(options.assign)
    if options.pattern is not None:
        return None
    return configured or None


def resolve(
    options: ReaderOptions, held: Iterable[TP], configured: list[str] | None, all_topics: Iterable[str] | None = None
) -> dict[TP, Bounds]:
    """The topic-partitions to read, each with its bounds, from the ones the backup ``held`` (listed for
    :func:`selected_topics`); ``all_topics`` names every topic of the backup, for errors (default: those held).

    Spark's meanings: ``startingOffsets``/``endingOffsets`` JSON must name every selected partition (-2 earliest,
    -1 latest), ending offsets are exclusive, times select the records at or after (before, for the end) them."""
    held = set(held)
    topics_held = {t for t, _ in held}
    every = set(all_topics) if all_topics is not None else topics_held
    if options.pattern is not None:
        regex = re.compile(options.pattern)
        wanted = {tp for tp in held if regex.fullmatch(tp[0])}
        if not wanted:
            raise ConfigError(
                f"subscribePattern {options.pattern!r} matches no topic of the backup (it holds {_listed(every)})",
                key="subscribePattern",
            )
    else:
        names = selected_topics(options, configured)
        option = options.topic_option or ("assign" if options.assign is not None else TOPICS)
        missing = [t for t in names or () if t not in topics_held]
        if missing:
            raise ConfigError(
                f"{option}: topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} not in the backup (it holds "
                f"{_listed(every)})",
                key=option,
            )
        wanted = {tp for tp in held if names is None or tp[0] in names}
        if options.assign is not None:
            for topic, partitions in options.assign.items():
                absent = [p for p in partitions if (topic, p) not in held]
                if absent:
                    has = sorted(p for t, p in held if t == topic)
                    raise ConfigError(
                        f"assign: {topic} partition{'s' if len(absent) > 1 else ''} "
                        f"{', '.join(map(str, absent))} not in the backup ({topic} holds partitions "
                        f"{', '.join(map(str, has))})",
                        key="assign",
                    )
            wanted = {(t, p) for t, ps in options.assign.items() for p in ps}
    _check_named(options.starting, wanted)
    _check_named(options.ending, wanted)
    return {tp: _bounds(options, tp) for tp in sorted(wanted)}


def _check_named(ends: Ends, wanted: set[TP]) -> None:
    """Spark's rule: per-partition JSON names exactly the partitions read."""
    if not ends.per_partition:
        return
    named = set(ends.per_partition)
    if named != wanted:
        extra, missing = sorted(named - wanted), sorted(wanted - named)
        parts = []
        if missing:
            parts.append(f"it leaves out {', '.join(f'{t}[{p}]' for t, p in missing)}")
        if extra:
            parts.append(f"{', '.join(f'{t}[{p}]' for t, p in extra)} {'are' if len(extra) > 1 else 'is'} not read")
        hint = "" if ends.by_time else " (-2 for earliest, -1 for latest)"
        raise ConfigError(
            f"{ends.option} must name every partition read, as with Spark's Kafka source{hint}: {'; '.join(parts)}",
            key=ends.option,
        )


def _bounds(options: ReaderOptions, tp: TP) -> Bounds:
    def offset(ends: Ends, whole: int) -> int | None:
        if ends.restore_style:
            return ends.restore_style.get(tp, ends.restore_style.get((None, tp[1])))
        if ends.by_time or not ends.per_partition:
            return None
        value = ends.per_partition[tp]
        return None if value == whole else value

    def time(ends: Ends) -> int | None:
        if ends.time is not None:
            return ends.time
        return ends.per_partition[tp] if ends.by_time else None

    return Bounds(
        offset(options.starting, EARLIEST),
        offset(options.ending, LATEST),
        time(options.starting),
        time(options.ending),
    )
