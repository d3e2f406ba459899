"""Declarative configuration definitions, in the spirit of Kafka's ``ConfigDef``.

Each property is declared once (key, type, default, validator, importance, doc, group); parsing, validation
messages, ``config show`` and docs/configuration.md are all derived from those declarations.

Over 450 lines: the property, its validators, the definition and the parsed configuration are one vocabulary, and
the redaction of secrets belongs beside the values it hides.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.errors import ConfigError


class Type(enum.Enum):
    STRING = "string"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


# ---------------------------------------------------------------------------------------------------------- validators
class Validator:
    """Checks a typed value; ``describe`` says what is allowed, for docs and error messages."""

    def __call__(self, key: str, value: Any) -> Any:
        return value

    def describe(self) -> str:
        return ""


@dataclass(frozen=True)
class Range(Validator):
    min: float | None = None
    max: float | None = None

    def __call__(self, key: str, value: Any) -> Any:
        if value is None:
            return value
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            raise ConfigError(f"Invalid value {value} for configuration {key}: must be {self.describe()}", key=key)
        return value

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"[{_num(self.min)},...,{_num(self.max)}]"
        if self.min is not None:
            return f"[{_num(self.min)},...]"
        assert self.max is not None, "a Range has at least one bound"
        return f"[...,{_num(self.max)}]"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class OneOf(Validator):
    """One of a fixed set of strings; matching is case-insensitive and yields the canonical spelling."""

    allowed: tuple[str, ...]

    def __call__(self, key: str, value: Any) -> Any:
        if value is None:
            return value
        for option in self.allowed:
            if str(value).strip().lower() == option.lower():
                return option
        raise ConfigError(
            f"Invalid value {value!r} for configuration {key}: must be one of {', '.join(self.allowed)}", key=key
        )

    def describe(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


@dataclass(frozen=True)
class Plugin(Validator):
    """A plugin class: short name, Confluent class alias or dotted Python path, checked against a registry."""

    registry_path: str  # "kafka_s3.core.formats:REGISTRY"; imported lazily to keep config free of plugin imports

    def _registry(self) -> Any:
        from kafka_s3.core.registry import import_object

        return import_object(self.registry_path)

    def __call__(self, key: str, value: Any) -> Any:
        if value is None or value == "":
            return value
        registry = self._registry()
        saved, registry.config_key = registry.config_key, key
        try:
            return registry.canonical(str(value))
        finally:
            registry.config_key = saved

    def describe(self) -> str:
        registry = self._registry()
        return "[" + ", ".join(registry.names()) + "] or a dotted path to a Python class"


@dataclass(frozen=True)
class Check(Validator):
    """A free-form check: ``fn(value)`` returns an error reason or ``None``."""

    fn: Callable[[Any], str | None]
    text: str

    def __call__(self, key: str, value: Any) -> Any:
        if value is None:
            return value
        reason = self.fn(value)
        if reason:
            raise ConfigError(f"Invalid value {value!r} for configuration {key}: {reason}", key=key)
        return value

    def describe(self) -> str:
        return self.text


# -------------------------------------------------------------------------------------------------------- properties
@dataclass(frozen=True)
class Prop:
    key: str
    type: Type
    default: Any = REQUIRED
    doc: str = ""
    importance: Importance = Importance.MEDIUM
    group: str = "Connector"
    validator: Validator | None = None
    aliases: tuple[str, ...] = ()
    origin: str = "confluent"  # "confluent" (same meaning as Confluent's connector) or "kafka-s3" (our extension)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def secret(self) -> bool:
        return self.type is Type.PASSWORD or is_secret_key(self.key)

    def parse(self, raw: Any) -> Any:
        try:
            value = _convert(self.key, self.type, raw)
            if self.validator is not None:
                value = self.validator(self.key, value)
        except ConfigError as exc:
            if not self.secret or raw in (None, ""):
                raise
            # The message of a secret's bad value must not carry the value.
            text = str(exc)
            for shown in {repr(raw), repr(str(raw)), str(raw)}:
                text = text.replace(shown, REDACTED)
            raise ConfigError(text, key=self.key) from None
        return value

    def default_value(self) -> Any:
        if self.required:
            return None
        return self.parse(self.default) if isinstance(self.default, str) else self.default


_INT_RE = re.compile(r"^[+-]?\d+$")


def _convert(key: str, typ: Type, raw: Any) -> Any:
    if raw is None:
        return None
    if typ in (Type.STRING, Type.PASSWORD, Type.CLASS):
        return str(raw).strip() if typ is not Type.PASSWORD else str(raw)
    if typ in (Type.INT, Type.LONG):
        if isinstance(raw, bool):
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: expected an integer", key=key)
        if isinstance(raw, int):
            value = raw
        else:
            text = str(raw).strip()
            if not _INT_RE.match(text):
                raise ConfigError(
                    f"Invalid value {raw!r} for configuration {key}: Not a number of type {typ.name}", key=key
                )
            value = int(text)
        limit = INT_MAX if typ is Type.INT else LONG_MAX
        if not -limit - 1 <= value <= limit:
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: out of range for {typ.name}", key=key)
        return value
    if typ is Type.DOUBLE:
        try:
            return float(raw)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"Invalid value {raw!r} for configuration {key}: Not a number of type DOUBLE", key=key
            ) from exc
    if typ is Type.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {key}: Expected value to be either true or false", key=key
        )
    if typ is Type.LIST:
        if isinstance(raw, (list, tuple)):
            return [str(x).strip() for x in raw if str(x).strip()]
        text = str(raw).strip()
        return [part.strip() for part in text.split(",") if part.strip()] if text else []
    raise AssertionError(typ)


# -------------------------------------------------------------------------------------------------------- secrets
_SECRET_PATTERNS = (
    re.compile(r"secret", re.I),
    re.compile(r"password", re.I),
    re.compile(r"(^|\.)sasl\.", re.I),
    re.compile(r"(^|\.)ssl\.(keystore\.key|key\.pem)$", re.I),  # an inline private key
    re.compile(r"sse\.customer\.key", re.I),
    re.compile(r"user\.info", re.I),
    re.compile(r"(^|\.)token", re.I),
    re.compile(r"credentials?\.(value|json)", re.I),
    re.compile(r"(^|\.)credential$", re.I),  # an Iceberg REST catalog's client id:secret
)
REDACTED = "[hidden]"
# Secrets inside values that are not secret themselves: the password of a URL's user info
# (``https://user:pass@host``), of a URL's query (a JDBC URL's ``?user=u&password=...``) and the quoted password of a
# JAAS line (``password="..."``).
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s/]+)(?P<tail>@)")
_JAAS_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*\")(?P<secret>[^\"]*)(?P<tail>\")", re.I)
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&;]password=)(?P<secret>[^&;#\s]+)(?P<tail>)", re.I)
_EMBEDDED = (_URL_PASSWORD, _QUERY_PASSWORD, _JAAS_PASSWORD)


def is_secret_key(key: str) -> bool:
    return any(p.search(key) for p in _SECRET_PATTERNS)


def embedded_secrets(text: str) -> list[str]:
    """The passwords inside a value: a URL's user info or query password, a JAAS line's ``password="..."``."""
    return [m.group("secret") for pattern in _EMBEDDED for m in pattern.finditer(text)]


def redact_text(text: str) -> str:
    """``text`` with every URL user-info or query password and JAAS password replaced by :data:`REDACTED`."""
    for pattern in _EMBEDDED:
        text = pattern.sub(lambda m: m.group("head") + REDACTED + m.group("tail"), text)
    return text


def secret_values_of(definition: ConfigDef, raw: Mapping[str, Any]) -> list[str]:
    """Every secret in raw settings (before parsing, so an error about them can be scrubbed too): the values of
    secret keys and the passwords embedded in any value."""
    aliases = definition.alias_map()
    out = []
    for key, value in raw.items():
        if not isinstance(value, str) or not value:
            continue
        prop = definition.props.get(aliases.get(key, key))
        if prop.secret if prop else is_secret_key(key):
            out.append(value)
        out.extend(embedded_secrets(value))
    return [v for v in out if len(v) >= 4]


# -------------------------------------------------------------------------------------------------------- definitions
@dataclass
class ConfigDef:
    """The full set of properties of one connector (sink or source)."""

    name: str
    props: dict[str, Prop] = field(default_factory=dict)
    # "module:attribute" of a connector's definition: a parsed Config pickles it by that name (a Spark task finds
    # it in its own import of the module), not by value
    home: str = ""
    # Keys we recognise from Confluent/Connect but do not implement: a warning naming the key, nothing else.
    unsupported: dict[str, str] = field(default_factory=dict)
    # Keys that are known and deliberately without effect here (e.g. a backup's keys in a restore): no warning.
    quiet: set[str] = field(default_factory=set)
    # Key prefixes handled elsewhere (converter settings, transforms, client overrides...).
    passthrough_prefixes: tuple[str, ...] = ()
    # Cross-property checks, run after every property parsed.
    checks: list[Callable[[Config], None]] = field(default_factory=list)
    # Rewrites of the raw settings before anything is parsed (e.g. KCQL statements expanded into properties).
    preprocessors: list[Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=list)
    # Other names of properties defined elsewhere, alias -> key (a peer's property names, declared in its package),
    # accepted as the properties' own aliases are.
    aliases: dict[str, str] = field(default_factory=dict)

    def __reduce__(self) -> str | tuple[Any, ...]:
        if not self.home:
            return super().__reduce__()
        return (_definition_at, (self.home,))

    def define(self, *props: Prop) -> ConfigDef:
        for p in props:
            if p.key in self.props:
                raise ValueError(f"duplicate property {p.key}")
            self.props[p.key] = p
        return self

    def include(self, other: ConfigDef) -> ConfigDef:
        for p in other.props.values():
            if p.key not in self.props:
                self.props[p.key] = p
        self.unsupported.update(other.unsupported)
        self.passthrough_prefixes += tuple(x for x in other.passthrough_prefixes if x not in self.passthrough_prefixes)
        self.checks.extend(other.checks)
        self.preprocessors.extend(p for p in other.preprocessors if p not in self.preprocessors)
        self.aliases.update(other.aliases)
        return self

    def alias_map(self) -> dict[str, str]:
        return {**self.aliases, **{alias: p.key for p in self.props.values() for alias in p.aliases}}

    def aliases_of(self, key: str) -> list[str]:
        """Every other name of property ``key`` (included definitions' first, then the property's own)."""
        return [alias for alias, target in self.alias_map().items() if target == key]

    def groups(self) -> list[str]:
        seen: list[str] = []
        for p in self.props.values():
            if p.group not in seen:
                seen.append(p.group)
        return seen

    def _suggest(self, key: str) -> str:
        """`` (did you mean 'flush.size'?)`` when a known key is close to the unknown ``key``, else nothing."""
        known = [*self.props, *self.alias_map(), *self.quiet]
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def parse(self, raw: Mapping[str, Any], *, strict_required: bool = True) -> Config:
        """Type and validate ``raw`` (already interpolated). Unknown keys become warnings, never silent."""
        for preprocess in self.preprocessors:
            raw = preprocess(dict(raw))
        aliases = self.alias_map()
        originals: dict[str, str] = {}
        warnings: list[str] = []
        for key, value in raw.items():
            canonical = aliases.get(key, key)
            if canonical != key and canonical in raw:
                warnings.append(f"'{key}' is an alias of '{canonical}', which is also set: '{key}' ignored")
                continue
            originals[canonical] = value
        values: dict[str, Any] = {}
        for key, prop in self.props.items():
            if key in originals:
                values[key] = prop.parse(originals[key])
            elif prop.required:
                if strict_required:
                    typo = difflib.get_close_matches(
                        key, [k for k in originals if k not in self.props], n=1, cutoff=0.8
                    )
                    hint = f" '{typo[0]}' is set: did you mean '{key}'?" if typo else ""
                    raise ConfigError(
                        f'Missing required configuration "{key}" which has no default value.{hint}', key=key
                    )
                values[key] = None
            else:
                values[key] = prop.default_value()
        extras: dict[str, str] = {}
        for key, value in originals.items():
            if key in self.props:
                continue
            if key in self.quiet:
                continue
            if key in self.unsupported:
                warnings.append(f"'{key}' is not supported by kafka-s3 and is ignored: {self.unsupported[key]}")
            elif any(key.startswith(prefix) for prefix in self.passthrough_prefixes):
                extras[key] = value
            else:
                warnings.append(f"'{key}' is not a known {self.name} property and is ignored{self._suggest(key)}")
        config = Config(self, values, originals, extras, warnings)
        for check in self.checks:
            check(config)
        return config


def _definition_at(home: str) -> ConfigDef:
    import importlib

    module, attribute = home.split(":")
    definition = getattr(importlib.import_module(module), attribute)
    assert isinstance(definition, ConfigDef), home
    return definition


class Config(Mapping[str, Any]):
    """A parsed configuration: typed values for every defined key, plus pass-through extras and warnings.

    Frozen once parsed (:meth:`replace` makes a changed copy). It is what a job's Spark tasks receive: it pickles as
    its typed values and its definition's name, so a task never parses properties again."""

    definition: ConfigDef
    _values: dict[str, Any]
    originals: dict[str, Any]
    extras: dict[str, str]
    warnings: list[str]  # filled while parsing (checks, the loader), read-only after

    def __init__(
        self,
        definition: ConfigDef,
        values: dict[str, Any],
        originals: dict[str, Any],
        extras: dict[str, str],
        warnings: list[str],
    ):
        set_ = super().__setattr__
        set_("definition", definition)
        set_("_values", values)
        set_("originals", originals)
        set_("extras", extras)
        set_("warnings", warnings)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a parsed configuration is frozen ({name}): make a copy with replace()")

    @property
    def fingerprint(self) -> str:
        """A digest of the settings: equal for equal configurations (a worker's cache key)."""
        import hashlib
        import json

        doc = json.dumps([self.definition.name, self.originals], sort_keys=True, default=str)
        return hashlib.blake2b(doc.encode(), digest_size=16).hexdigest()

    def __getitem__(self, key: str) -> Any:
        if key in self._values:
            return self._values[key]
        if key in self.extras:
            return self.extras[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def is_set(self, key: str) -> bool:
        """True when the user gave the key (as opposed to the default applying)."""
        return key in self.originals

    def with_prefix(self, prefix: str, strip: bool = True) -> dict[str, str]:
        """Every original (or extra) key under ``prefix``, e.g. ``value.converter.`` settings."""
        merged = {**self.originals}
        return {(k[len(prefix) :] if strip else k): v for k, v in merged.items() if k.startswith(prefix)}

    def replace(self, **updates: Any) -> Config:
        """A copy with some typed values replaced (CLI flags overriding the file)."""
        values = dict(self._values)
        originals = dict(self.originals)
        for key, value in updates.items():
            dotted = key.replace("__", ".")
            values[dotted] = value
            originals[dotted] = value
        return Config(self.definition, values, originals, dict(self.extras), list(self.warnings))

    def as_rows(self) -> list[tuple[str, str, bool]]:
        """``(key, printable value, is_default)`` for every defined key then every extra; secrets redacted."""
        rows = []
        for key, prop in self.definition.props.items():
            value = self._values.get(key)
            rows.append((key, render_value(key, value, prop.secret), not self.is_set(key)))
        for key, value in sorted(self.extras.items()):
            rows.append((key, render_value(key, value, is_secret_key(key)), False))
        return rows

    def secret_values(self) -> list[str]:
        return secret_values_of(self.definition, {**self.originals, **self.extras})


def render_value(key: str, value: Any, secret: bool) -> str:
    if value is None:
        return "null"
    if secret and value != "":
        return REDACTED
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return redact_text(",".join(str(v) for v in value))
    return redact_text(str(value))


def redact_mapping(settings: Mapping[str, Any], extra_secret_keys: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of a flat settings map (e.g. librdkafka config) with secret values hidden."""
    extra = set(extra_secret_keys)
    return {
        k: (
            REDACTED
            if (is_secret_key(k) or k in extra) and v not in (None, "")
            else redact_text(v)
            if isinstance(v, str)
            else v
        )
        for k, v in settings.items()
    }


def require_one_of(*keys: str) -> Callable[[Config], None]:
    def check(config: Config) -> None:
        given = [k for k in keys if config.get(k) not in (None, "", [])]
        if len(given) != 1:
            raise ConfigError(
                f"Must configure exactly one of {' or '.join(keys)} (given: {', '.join(given) or 'none'})", key=keys[0]
            )

    return check
