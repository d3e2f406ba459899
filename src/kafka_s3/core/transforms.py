"""Target topic names for a restore: ``topic.rename`` pairs, then Kafka Connect's RegexRouter transforms.

Only topic routing is meaningful for a restore; any other single message transform is refused with the key that
declares it, rather than silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError

REGEX_ROUTER = ("org.apache.kafka.connect.transforms.RegexRouter", "RegexRouter")


def java_replacement(replacement: str) -> Callable[[re.Match[str]], str]:
    """Java's ``Matcher.replaceFirst`` replacement syntax (``$1``, ``${name}``, ``\\$``) as a Python function."""
    tokens = re.findall(r"\\.|\$\{\w+\}|\$\d+|.", replacement, flags=re.S)

    def render(match: re.Match[str]) -> str:
        out = []
        for token in tokens:
            if token.startswith("\\"):
                out.append(token[1:])
            elif token.startswith("${"):
                out.append(match.group(token[2:-1]) or "")
            elif token.startswith("$") and len(token) > 1:
                out.append(match.group(int(token[1:])) or "")
            else:
                out.append(token)
        return "".join(out)

    return render


def topic_router(config: Config) -> Callable[[str], str]:
    renames = {}
    for pair in config["topic.rename"]:
        source, _, target = pair.partition(":")
        renames[source.strip()] = target.strip()
    routers: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = []
    for name in config["transforms"]:
        prefix = f"transforms.{name}."
        settings = config.with_prefix(prefix)
        kind = settings.get("type", "")
        if kind not in REGEX_ROUTER:
            raise ConfigError(
                f"{prefix}type={kind!r}: only RegexRouter (org.apache.kafka.connect.transforms.RegexRouter) is "
                "supported by the restore (it renames target topics)",
                key=f"{prefix}type",
            )
        if settings.get("predicate"):
            raise ConfigError(f"{prefix}predicate: predicates are not supported", key=f"{prefix}predicate")
        for required in ("regex", "replacement"):
            if required not in settings:
                raise ConfigError(f"{prefix}{required} is required for RegexRouter", key=f"{prefix}{required}")
        try:
            pattern = re.compile(settings["regex"])
        except re.error as exc:
            raise ConfigError(
                f"{prefix}regex={settings['regex']!r} is not a valid regex: {exc}", key=f"{prefix}regex"
            ) from exc
        routers.append((pattern, java_replacement(settings["replacement"])))

    def route(topic: str) -> str:
        topic = renames.get(topic, topic)
        for pattern, replacement in routers:
            match = pattern.fullmatch(topic)
            if match:
                topic = replacement(match)
        return topic

    return route
