"""KCQL, the SQL-like configuration of Lenses' S3 sink and source (``connect.s3.kcql``): its tokens and grammar,
parsed into :class:`Statement` objects (their translation into properties is :mod:`kafka_s3.core.peers.lenses.config`).

One or more statements, separated by ``;``::

    INSERT INTO bucket:prefix SELECT * FROM topic
        [PARTITIONBY field[, field...]] [STOREAS format] [WITHPARTITIONER KeysAndValues|Values]
        [WITH_FLUSH_SIZE bytes] [WITH_FLUSH_INTERVAL seconds] [WITH_FLUSH_COUNT records]
        [PROPERTIES('key'=value, ...)]

A source statement reads a bucket into a topic: ``INSERT INTO topic SELECT * FROM bucket:prefix STOREAS JSON``.
Keywords are case-insensitive. Any name can be back-quoted (`` `AVRO` ``, `` `my topic` ``). ``=`` may come before a
clause's value (``WITH_FLUSH_COUNT = 5000``). The optional clauses may come in any order, each at most once. One
topic is read by one statement only.

Errors are :class:`~kafka_s3.core.errors.ConfigError` naming ``connect.s3.kcql`` and the line and column of the token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.config.common import PATH_STYLES
from kafka_s3.core.errors import ConfigError

KCQL_KEY = "connect.s3.kcql"
#: a sink statement's STOREAS → ``format.class`` (any other kafka-s3 format name is taken as it is)
STORE_AS = {
    "AVRO": "avro",
    "PARQUET": "parquet",
    "JSON": "json",
    "TEXT": "bytearray",
    "BYTES": "bytearray",
    "CSV": "csv",
    "CSV_WITHHEADERS": "csv_withheaders",
}
#: WITHPARTITIONER's values: ``partition.path.style``'s
PARTITIONER_STYLES = PATH_STYLES
NUMBER_CLAUSES = {
    "WITH_FLUSH_SIZE": "flush_size",
    "WITH_FLUSH_INTERVAL": "flush_interval",
    "WITH_FLUSH_COUNT": "flush_count",
}
CLAUSES = ("PARTITIONBY", "STOREAS", "WITHPARTITIONER", "PROPERTIES", *NUMBER_CLAUSES)

_WORD = re.compile(r"[A-Za-z0-9_.\-/]+")
_PUNCTUATION = ":,*=;()"


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "quoted" (back-quoted), "string" (single-quoted), a punctuation character, or "end"
    text: str
    index: int  # character index in the KCQL text
    line: int
    column: int

    @property
    def shown(self) -> str:
        if self.kind == "end":
            return "the end of the statement"
        if self.kind == "string":
            return f"'{self.text}'"
        return f"`{self.text}`" if self.kind == "quoted" else repr(self.text)

    def is_keyword(self, keyword: str) -> bool:
        return self.kind == "word" and self.text.upper() == keyword


def error(token: Token, problem: str) -> ConfigError:
    return ConfigError(
        f"{KCQL_KEY}: {problem} at line {token.line}, column {token.column} (character {token.index})", key=KCQL_KEY
    )


def tokens(text: str) -> Iterator[Token]:
    """Words, back-quoted names and punctuation, with their positions; an ``end`` token last."""
    index, line, line_start = 0, 1, 0
    while index < len(text):
        char = text[index]
        column = index - line_start + 1
        if char == "\n":
            index, line, line_start = index + 1, line + 1, index + 1
        elif char.isspace():
            index += 1
        elif char == "`":
            close = text.find("`", index + 1)
            if close < 0:
                raise error(Token("`", "`", index, line, column), "unclosed back-quote")
            name = text[index + 1 : close]
            if "\n" in name or not name:
                raise error(Token("`", "`", index, line, column), "a back-quoted name must be non-empty, on one line")
            yield Token("quoted", name, index, line, column)
            index = close + 1
        elif char == "'":
            close = text.find("'", index + 1)
            if close < 0:
                raise error(Token("'", "'", index, line, column), "unclosed quote")
            yield Token("string", text[index + 1 : close], index, line, column)
            line += text.count("\n", index, close)
            index = close + 1
        elif char in _PUNCTUATION:
            yield Token(char, char, index, line, column)
            index += 1
        else:
            match = _WORD.match(text, index)
            if not match:
                raise error(Token("?", char, index, line, column), f"unexpected character {char!r}")
            yield Token("word", match.group(), index, line, column)
            index = match.end()
    yield Token("end", "", index, line, index - line_start + 1)


@dataclass(frozen=True)
class Statement:
    """One ``INSERT INTO ... SELECT * FROM ...`` statement, as written (its properties:
    :mod:`kafka_s3.core.peers.lenses.config`)."""

    text: str
    bucket: str
    prefix: str | None
    topic: str
    topic_token: Token
    partition_by: tuple[str, ...] = ()
    store_as: str | None = None  # format.class
    partitioner: str | None = None  # KeysAndValues | Values
    flush_size: int | None = None
    flush_interval: int | None = None
    flush_count: int | None = None
    from_prefix: str | None = None  # ``FROM bucket:prefix`` (source statements)
    store_as_name: str | None = None  # STOREAS as written
    options: tuple[tuple[str, str, Token], ...] = ()  # PROPERTIES('key'=value, ...)


@dataclass
class _Parser:
    source: str
    stream: list[Token] = field(default_factory=list)
    at: int = 0

    def __post_init__(self) -> None:
        self.stream = list(tokens(self.source))

    @property
    def token(self) -> Token:
        return self.stream[self.at]

    def advance(self) -> Token:
        token = self.token
        if token.kind != "end":
            self.at += 1
        return token

    def keyword(self, keyword: str, context: str = "") -> Token:
        if not self.token.is_keyword(keyword):
            raise error(self.token, f"expected {keyword}{context}, found {self.token.shown}")
        return self.advance()

    def punctuation(self, char: str) -> bool:
        if self.token.kind == char:
            self.advance()
            return True
        return False

    def name(self, what: str) -> Token:
        if self.token.kind not in ("word", "quoted"):
            raise error(self.token, f"expected {what}, found {self.token.shown}")
        return self.advance()

    def statements(self) -> list[Statement]:
        found: list[Statement] = []
        while True:
            while self.punctuation(";"):
                pass
            if self.token.kind == "end":
                return found
            found.append(self.statement())

    def statement(self) -> Statement:
        first = self.keyword("INSERT", " (statements are INSERT INTO bucket:prefix SELECT * FROM topic ...)")
        self.keyword("INTO", " after INSERT")
        bucket = self.name("a bucket name after INSERT INTO").text
        prefix = None
        if self.punctuation(":"):
            prefix = self.name("a path prefix after 'bucket:'").text.strip("/")
        self.keyword("SELECT", " after INSERT INTO bucket:prefix")
        if not self.punctuation("*"):
            raise error(self.token, f"only SELECT * is supported, found {self.token.shown}")
        self.keyword("FROM", " after SELECT *")
        topic_token = self.name("a topic name after FROM")
        values: dict[str, Any] = {}
        if self.punctuation(":"):
            values["from_prefix"] = self.name("a path prefix after 'FROM bucket:'").text.strip("/")
        seen: dict[str, Token] = {}
        while self.token.kind not in (";", "end"):
            token = self.token
            clause = token.text.upper() if token.kind == "word" else ""
            if clause not in CLAUSES:
                raise error(token, f"expected one of {', '.join(CLAUSES)}, ';' or the end, found {token.shown}")
            if clause in seen:
                previous = seen[clause]
                raise error(token, f"{clause} appears twice (first at line {previous.line}, column {previous.column})")
            seen[clause] = self.advance()
            if clause == "PARTITIONBY":
                values["partition_by"] = self.partition_fields()
            elif clause == "STOREAS":
                values["store_as_token"] = self.store_as_token()
            elif clause == "PROPERTIES":
                values["options"] = self.options()
            elif clause == "WITHPARTITIONER":
                values["partitioner"] = self.partitioner_style()
            else:
                values[NUMBER_CLAUSES[clause]] = self.number(clause)
        if "WITHPARTITIONER" in seen and "PARTITIONBY" not in seen:
            raise error(seen["WITHPARTITIONER"], "WITHPARTITIONER needs a PARTITIONBY clause")
        end = self.token.index
        store_as_token = values.pop("store_as_token", None)
        if store_as_token is not None:
            values["store_as_name"] = store_as_token.text
            if "from_prefix" not in values:  # a sink statement: a format kafka-s3 writes
                values["store_as"] = resolve_store_as(store_as_token)
        return Statement(
            self.source[first.index : end].strip(), bucket, prefix, topic_token.text, topic_token, **values
        )

    def options(self) -> tuple[tuple[str, str, Token], ...]:
        if not self.punctuation("("):
            raise error(self.token, f"expected '(' after PROPERTIES, found {self.token.shown}")
        found: list[tuple[str, str, Token]] = []
        while True:
            token = self.token
            if token.kind not in ("string", "word", "quoted"):
                raise error(token, f"expected a 'key' in PROPERTIES, found {token.shown}")
            self.advance()
            if not self.punctuation("="):
                raise error(self.token, f"expected '=' after {token.shown} in PROPERTIES, found {self.token.shown}")
            value = self.token
            if value.kind not in ("string", "word", "quoted"):
                raise error(value, f"expected a value for {token.shown} in PROPERTIES, found {value.shown}")
            self.advance()
            if any(key == token.text for key, _, _ in found):
                raise error(token, f"PROPERTIES key {token.shown} appears twice")
            found.append((token.text, value.text, token))
            if not self.punctuation(","):
                break
        if not self.punctuation(")"):
            raise error(self.token, f"expected ')' after the PROPERTIES, found {self.token.shown}")
        return tuple(found)

    def partition_fields(self) -> tuple[str, ...]:
        parenthesised = self.punctuation("(")
        names = []
        while True:
            token = self.name("a field name (value field, _key or _header.<name>)")
            if "," in token.text:
                raise error(token, "a partition field name cannot contain ','")
            if token.text.lower().startswith("_header.") and len(token.text) == len("_header."):
                raise error(token, "_header. needs a header name")
            names.append(token.text)
            if not self.punctuation(","):
                break
        if parenthesised and not self.punctuation(")"):
            raise error(self.token, f"expected ')' after the PARTITIONBY fields, found {self.token.shown}")
        return tuple(names)

    def store_as_token(self) -> Token:
        self.punctuation("=")
        return self.name("a storage format after STOREAS (AVRO, PARQUET, JSON, TEXT, BYTES)")

    def partitioner_style(self) -> str:
        self.punctuation("=")
        token = self.name("KeysAndValues or Values after WITHPARTITIONER")
        for style in PARTITIONER_STYLES:
            if token.text.lower() == style.lower():
                return style
        raise error(token, f"WITHPARTITIONER must be KeysAndValues or Values, found {token.shown}")

    def number(self, clause: str) -> int:
        self.punctuation("=")
        token = self.token
        if token.kind != "word" or not token.text.isdigit() or int(token.text) <= 0:
            raise error(token, f"expected a positive whole number after {clause}, found {token.shown}")
        self.advance()
        return int(token.text)


def resolve_store_as(token: Token) -> str:
    """A sink statement's STOREAS as ``format.class``."""
    known = STORE_AS.get(token.text.upper())
    if known:
        return known
    from kafka_s3.core.config.registries import FORMATS
    from kafka_s3.core.registry import import_object

    try:
        canonical: str = import_object(FORMATS).canonical(token.text)
        return canonical
    except ConfigError:
        raise error(
            token,
            f"STOREAS {token.text} is not a format kafka-s3 writes (AVRO, PARQUET, JSON, TEXT, BYTES, "
            "or a kafka-s3 format name such as block_gzip)",
        ) from None


def parse(text: str) -> list[Statement]:
    """Every statement of a ``connect.s3.kcql`` value, checked (one topic per statement, each topic once)."""
    statements = _Parser(text).statements()
    if not statements:
        raise error(Token("end", "", 0, 1, 1), "no statement (expected INSERT INTO bucket:prefix SELECT * FROM topic)")
    seen: dict[str, Statement] = {}
    for statement in statements:
        if statement.topic in seen:
            first = seen[statement.topic].topic_token
            raise error(
                statement.topic_token,
                f"topic {statement.topic!r} is already read by the statement at line {first.line}, column "
                f"{first.column}: the statements share one consumer group, which keeps one position per partition",
            )
        seen[statement.topic] = statement
    return statements
