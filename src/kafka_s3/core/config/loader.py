"""Reading configuration files: Java ``.properties`` and Kafka Connect REST JSON, with config-provider interpolation.

``${env:VAR}``, ``${file:/path/to/file.properties:key}`` and ``${directory:/path/to/dir:file}`` are resolved as
Kafka Connect's EnvVar/File/Directory config providers resolve them, so secrets can stay out of the file.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kafka_s3.core.config.model import Config, ConfigDef
from kafka_s3.core.errors import ConfigError

_REFERENCE = re.compile(r"\$\{([^}:]+):(?:([^}]*):)?([^}]*)\}")


def read_properties_text(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (comments, ``=``/``:``/space separators, continuations, escapes)."""
    from jproperties import Properties

    props = Properties()
    try:
        props.load(io.BytesIO(text.encode("utf-8")), "utf-8")
    except Exception as exc:  # jproperties raises its own ParseError subclasses
        raise ConfigError(f"cannot parse properties: {exc}") from exc
    return {key: value for key, (value, _meta) in props.items()}


def read_raw(path: str | os.PathLike[str]) -> dict[str, str]:
    """Raw string settings from a ``.properties`` file or a Connect REST JSON file
    (``{"name":..., "config":{...}}``)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from exc
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
        return raw_from_rest_json(doc, str(file))
    return read_properties_text(text)


def raw_from_rest_json(doc: Any, origin: str = "JSON") -> dict[str, str]:
    if not isinstance(doc, dict):
        raise ConfigError(f"{origin}: expected a JSON object")
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
                    file_cache[path] = read_properties_text(Path(path).read_text(encoding="utf-8"))
                except OSError as exc:
                    raise ConfigError(
                        f"{key}: cannot read {path} referenced by a ${{file:...}}: {exc.strerror}", key
                    ) from exc
            if name not in file_cache[path]:
                raise ConfigError(f"{key}: key {name!r} not found in {path}", key)
            return file_cache[path][name]
        if provider == "directory":
            target = Path(path or ".") / name
            try:
                return target.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"{key}: cannot read {target} referenced by a ${{directory:...}}: {exc.strerror}", key
                ) from exc
        raise ConfigError(
            f"{key}: unknown config provider {provider!r} in {match.group(0)} (env, file, directory)", key
        )

    return {k: _REFERENCE.sub(partial(resolve, k), v) if isinstance(v, str) else v for k, v in raw.items()}


def load(
    definition: ConfigDef,
    path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Read, interpolate and validate a configuration; ``overrides`` (e.g. ``--set key=value``) win over the file."""
    raw = read_raw(path) if path is not None else {}
    raw.update(overrides or {})
    return definition.parse(interpolate(raw, environ))


def load_all(
    definition: ConfigDef,
    path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Config]:
    """Like :func:`load`, but one configuration per KCQL statement when ``connect.s3.kcql`` holds several (each
    with its statement's properties over the file's); a single configuration otherwise."""
    from kafka_s3.core.config.kcql import split_statements

    raw = read_raw(path) if path is not None else {}
    raw.update(overrides or {})
    return [definition.parse(statement) for statement in split_statements(interpolate(raw, environ))]
