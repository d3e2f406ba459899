"""A registry per plugin kind (formats, partitioners, converters, stores, timestamp extractors).

A plugin is found by its short name (``avro``), by an alias such as the Confluent Java class name
(``io.confluent.connect.s3.format.avro.AvroFormat``), or by a dotted Python path to a user class
(``my_pkg.partitioners.ByRegion`` or ``my_pkg.partitioners:ByRegion``). Targets are registered as import strings so
that resolving one plugin never imports the others: Spark worker start-up stays lean. A registry may name a function
that registers further plugins (the peers', ``kafka_s3.core.peers``: each peer registers its own formats and
partitioners): it is called once, before the first lookup.
"""

from __future__ import annotations

import importlib
from typing import Any, Generic, TypeVar

from kafka_s3.core.errors import ConfigError

T = TypeVar("T")


def import_object(path: str) -> Any:
    """Import ``pkg.mod:attr`` or ``pkg.mod.attr``."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"not a dotted path: {path!r}")
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Maps names and aliases to import strings; resolves user classes by dotted path."""

    def __init__(self, kind: str, config_key: str, more: str | None = None):
        self.kind = kind
        self.config_key = config_key
        self._targets: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        #: "module:function" registering further plugins in this registry (``function(registry)``), called once
        #: before the first lookup: the plugins of modules that sit above the registry's own (the peers')
        self._more = more

    def _complete(self) -> None:
        more = self._more
        if more is not None:
            import_object(more)(self)  # registering a name again (two threads at once) replaces it with itself
            self._more = None

    def register(self, name: str, target: str, aliases: tuple[str, ...] = ()) -> None:
        self._targets[name] = target
        self._aliases[name.lower()] = name
        for alias in aliases:
            self._aliases[alias.lower()] = name

    def names(self) -> list[str]:
        self._complete()
        return list(self._targets)

    def aliases_of(self, name: str) -> list[str]:
        self._complete()
        return [a for a, n in self._aliases.items() if n == name and a != name.lower()]

    def canonical(self, value: str) -> str:
        """The registered short name for ``value``, or ``value`` itself when it is a dotted path to a user class."""
        self._complete()
        name = self._aliases.get(value.strip().lower())
        if name is not None:
            return name
        try:
            import_object(value.strip())
        except (ImportError, AttributeError, ValueError) as exc:
            allowed = ", ".join(self._targets)
            raise ConfigError(
                f"{self.config_key}={value!r} is not a known {self.kind} (allowed: {allowed}, a Confluent class name, "
                f"or a dotted path to a Python class): {exc}",
                key=self.config_key,
            ) from None
        return value.strip()

    def resolve(self, value: str) -> T:
        """The plugin object (usually a class) for a name, alias or dotted path."""
        name = self.canonical(value)
        target = self._targets.get(name, name)
        try:
            plugin: T = import_object(target)
        except (ImportError, AttributeError) as exc:  # a registered target failing to import is a bug
            raise ConfigError(f"{self.config_key}={value!r}: cannot load {target}: {exc}", key=self.config_key) from exc
        return plugin
