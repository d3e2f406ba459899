"""Reading configuration files: Java ``.properties`` and Kafka Connect REST JSON, with config-provider interpolation.

``${env:VAR}``, ``${file:/path/to/file.properties:key}`` and ``${directory:/path/to/dir:file}`` are resolved as
Kafka Connect's EnvVar/File/Directory config providers resolve them, so secrets can stay out of the file.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kafka_s3.core.config.model import Config, ConfigDef, secret_values_of
from kafka_s3.core.errors import ConfigError

_REFERENCE = re.compile(r"\$\{([^}:]+):(?:([^}]*):)?([^}]*)\}")


def read_properties_text(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (comments, ``=``/``:``/space separators, continuations, escapes)."""
    return _read_properties(text)[0]


def _read_properties(text: str) -> tuple[dict[str, str], dict[str, list[int]]]:
    """The settings of ``.properties`` text and the line numbers of every key set more than once."""
    from jproperties import Properties

    class _LineTracking(Properties):  # type: ignore[misc]  # jproperties is untyped
        """Remembers the line of every key it reads (the last assignment wins, as in Java)."""

        lines: dict[str, list[int]]

        def _parse_key(self) -> str:
            line = self._line_number
            key: str = super()._parse_key()
            self.lines.setdefault(key, []).append(line)
            return key

    props = _LineTracking()
    props.lines = {}
    try:
        props.load(io.BytesIO(text.encode("utf-8")), "utf-8")
    except Exception as exc:  # jproperties raises its own ParseError subclasses
        raise ConfigError(f"cannot parse properties: {exc}") from exc
    settings = {key: value for key, (value, _meta) in props.items()}
    return settings, {key: lines for key, lines in props.lines.items() if len(lines) > 1}


def read_text(path: str | os.PathLike[str], what: str = "config file") -> str:
    """A UTF-8 text file; one that is not UTF-8 is a :class:`ConfigError` naming the file, line and column."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {file}: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{what} {file} line {line} column {column}: byte 0x{data[exc.start]:02x} is not UTF-8; save the file "
            "as UTF-8 (or write the character as a \\u escape, e.g. \\u00e9 for é)"
        ) from None


def read_raw(path: str | os.PathLike[str]) -> dict[str, str]:
    """Raw string settings from a ``.properties`` file or a Connect REST JSON file
    (``{"name":..., "config":{...}}``)."""
    return read_raw_file(path)[0]


def read_raw_file(path: str | os.PathLike[str]) -> tuple[dict[str, str], list[str]]:
    """Like :func:`read_raw`, with the file's warnings (a key set twice: the last wins)."""
    file = Path(path)
    text = read_text(file)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) or file.suffix.lower() == ".json":
        repeated: dict[str, int] = {}

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            counts: dict[str, int] = {}
            for key, _value in items:
                counts[key] = counts.get(key, 0) + 1
            repeated.update((key, n) for key, n in counts.items() if n > 1)
            return dict(items)  # the last one wins, as json.loads does

        try:
            doc = json.loads(text, object_pairs_hook=pairs)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
        warnings = [f"{file}: '{key}' is set {n} times: the last one wins" for key, n in repeated.items()]
        return raw_from_rest_json(doc, str(file)), warnings
    settings, duplicates = _read_properties(text)
    warnings = [
        f"{file}: '{key}' is set {len(lines)} times (lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}): "
        "the last one wins"
        for key, lines in duplicates.items()
    ]
    return settings, warnings


JSON_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def raw_from_rest_json(doc: Any, origin: str = "JSON") -> dict[str, str]:
    """The settings of a Kafka Connect REST document: ``{"name": ..., "config": {...}}`` or the config object alone."""
    if not isinstance(doc, dict):
        raise ConfigError(
            f'{origin}: a Connect REST JSON configuration must be a JSON object ({{"name": ..., "config": {{...}}}} or '
            f"the config object alone), not a JSON {JSON_KINDS.get(type(doc), type(doc).__name__)}"
        )
    config = doc.get("config", doc)
    if not isinstance(config, dict):
        raise ConfigError(f'{origin}: "config" must be a JSON object')
    raw = {str(k): _json_scalar(v) for k, v in config.items()}
    if "name" in doc and "config" in doc:
        raw.setdefault("name", str(doc["name"]))
    return raw


def _json_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(_json_scalar(v) for v in value)
    return str(value)


def interpolate(raw: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Resolve ``${provider:[path:]key}`` references in every value."""
    env = os.environ if environ is None else environ
    file_cache: dict[str, dict[str, str]] = {}

    def resolve(key: str, match: re.Match[str]) -> str:
        provider, path, name = match.group(1), match.group(2), match.group(3)
        if provider == "env":
            var = path if path else name
            if var not in env:
                raise ConfigError(f"{key}: environment variable {var!r} referenced by {match.group(0)} is not set", key)
            return env[var]
        if provider == "file":
            if not path:
                raise ConfigError(f"{key}: {match.group(0)} needs a path: ${{file:/path/file.properties:key}}", key)
            if path not in file_cache:
                try:
                    file_cache[path] = read_properties_text(read_text(path, f"{key}: the ${{file:...}} file"))
                except ConfigError as exc:
                    raise ConfigError(str(exc), key) from None
            if name not in file_cache[path]:
                raise ConfigError(f"{key}: key {name!r} not found in {path}", key)
            return file_cache[path][name]
        if provider == "directory":
            target = Path(path or ".") / name
            try:
                return read_text(target, f"{key}: the ${{directory:...}} file")
            except ConfigError as exc:
                raise ConfigError(str(exc), key) from None
        raise ConfigError(
            f"{key}: unknown config provider {provider!r} in {match.group(0)} (env, file, directory)", key
        )

    return {k: _REFERENCE.sub(partial(resolve, k), v) if isinstance(v, str) else v for k, v in raw.items()}


Register = Callable[[Iterable[str]], None]


def _settings(
    definition: ConfigDef,
    path: str | os.PathLike[str] | None,
    overrides: Mapping[str, str] | None,
    environ: Mapping[str, str] | None,
    register_secrets: Register | None,
) -> tuple[dict[str, str], list[str]]:
    raw, warnings = read_raw_file(path) if path is not None else ({}, [])
    raw.update(overrides or {})
    if register_secrets is not None:
        register_secrets(secret_values_of(definition, raw))
    resolved = interpolate(raw, environ)
    if register_secrets is not None:  # before parsing: an error about a value must not show a secret in it
        register_secrets(secret_values_of(definition, resolved))
    return resolved, warnings


def load(
    definition: ConfigDef,
    path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    register_secrets: Register | None = None,
) -> Config:
    """Read, interpolate and validate a configuration; ``overrides`` (e.g. ``--set key=value``) win over the file.
    ``register_secrets`` receives the secrets of the settings before they are parsed."""
    raw, warnings = _settings(definition, path, overrides, environ, register_secrets)
    config = definition.parse(raw)
    config.warnings[:0] = warnings
    return config


def load_all(
    definition: ConfigDef,
    path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    register_secrets: Register | None = None,
) -> list[Config]:
    """Like :func:`load`, but one configuration per statement when a peer's settings hold several (Lenses' KCQL:
    ``connect.s3.kcql``; each with its statement's properties over the file's); a single configuration otherwise."""
    from kafka_s3.core.config.registries import peers

    raw, warnings = _settings(definition, path, overrides, environ, register_secrets)
    configs = [definition.parse(statement) for statement in peers().split_statements(raw)]
    for config in configs:
        config.warnings[:0] = warnings
    return configs
