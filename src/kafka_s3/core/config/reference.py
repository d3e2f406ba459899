"""The configuration reference (``docs/configuration.md``), generated from the property definitions.

``python -m kafka_s3.core.config.reference`` prints it; ``--write docs/configuration.md`` rewrites the file. A unit
test fails when the file is out of date, so the reference can never drift from the code.
"""

from __future__ import annotations

import sys
from collections.abc import Set as AbstractSet
from pathlib import Path

from kafka_s3.core.config.model import REQUIRED, ConfigDef, Prop

HEADER = """# Configuration reference

<!-- Generated from the property definitions by `python -m kafka_s3.core.config.reference --write
docs/configuration.md`; a unit test fails when it is stale. Do not edit by hand. -->

One file configures both directions: a backup reads the sink properties, a restore the source properties (the
connection, storage and format keys are shared). Confluent's property names, defaults and class names are accepted
unchanged; properties marked *(kafka-s3)* are this project's additions.

"""


def _default(prop: Prop) -> str:
    if prop.default is REQUIRED:
        return "required"
    if prop.default is None or prop.default == "":
        return '""' if prop.default == "" else "null"
    return f"`{prop.default}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_definition(definition: ConfigDef, title: str, skip: AbstractSet[str] = frozenset()) -> str:
    lines = [f"### {title}", ""]
    for group in definition.groups():
        props = [p for p in definition.props.values() if p.group == group and p.key not in skip]
        if not props:
            continue
        lines += [
            f"**{group}**",
            "",
            "| property | type | default | valid values | description |",
            "|---|---|---|---|---|",
        ]
        for p in props:
            valid = p.validator.describe() if p.validator else ""
            marker = " *(kafka-s3)*" if p.origin == "kafka-s3" else ""
            names = definition.aliases_of(p.key)
            aliases = f" Also accepted as: {', '.join(f'`{a}`' for a in names)}." if names else ""
            lines.append(
                f"| `{p.key}`{marker} | {p.type.value} | {_default(p)} | {_cell(valid)} | {_cell(p.doc)}{aliases} |"
            )
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE

    shared = set(SINK.props) & set(SOURCE.props)
    parts = [
        render_definition(SINK, "Backup (sink) properties"),
        render_definition(SOURCE, "Restore (source) properties (in addition to the shared ones above)", shared),
        "Keys accepted and ignored with a warning (no effect in kafka-s3): "
        + ", ".join(f"`{k}`" for k in sorted(SINK.unsupported))
        + ".",
        "",
        "Pass-through prefixes: `key.converter.*`, `value.converter.*` (converter settings), `consumer.*`, "
        "`producer.*`, `admin.*` and their `*.override.*` forms (librdkafka settings, as Kafka Connect layers them), "
        "`sasl.*`, `ssl.*`, `client.*`, `transforms.*`, `spark.*` (Spark settings of the job).",
    ]
    return "\n".join(parts).rstrip() + "\n"


def document() -> str:
    """The whole ``docs/configuration.md`` page."""
    return HEADER + render()


def write(path: Path) -> bool:
    """Write the page; returns whether it changed."""
    new = document()
    changed = not path.exists() or path.read_text() != new
    path.write_text(new)
    return changed


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        print("updated" if write(Path(sys.argv[2])) else "up to date")
    else:
        print(document())
