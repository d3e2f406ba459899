"""Every path, module and ``make`` target the documents name exists, and every link lands.

Checked in README.md, CONTRIBUTING.md, ARCHITECTURE.md, bench/README.md and docs/*.md (CHANGELOG.md is history: it
names what was there then):

- relative links ``[text](path#anchor)``: the path exists; an anchor into a markdown file (or into the document
  itself) is the slug of one of its headings, as GitHub makes them;
- backticked repository paths (``src/kafka_s3/...``, ``bench/run.py``, ``docs/x.md``, ``tests/...``), package paths
  (``core/formats/base.py``, ``io/kafka``: under ``src/kafka_s3/``, with or without ``.py``) and bare ``*.md``
  names: they exist; templates (``<name>``, ``*``, ``{a,b}``, ``…``) are not paths and are left alone;
- ``kafka_s3.x.y`` and ``tools.x`` (the dev tooling at the repository root) modules named in backticks, after
  ``python -m`` or in ``from … import``: the module exists (a last segment that is no module is taken as an attribute
  of the module before it);
- ``make <target>`` in code (inline or fenced): the Makefile has the target.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPO_DIRS = ("src", "tests", "bench", "docs")
PACKAGE_DIRS = ("core", "io", "pipelines", "spark", "cli")  # paths written relative to src/kafka_s3/
MODULE_HOMES = {"kafka_s3": "src", "tools": "."}  # the packages whose modules the documents name, and where they live
TEMPLATE = re.compile(r"[<>*{}$…]|\.\.\.|^\.{1,2}/|^/|^~|^[a-z][a-z0-9+.-]*:")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+([A-Za-z][\w.-]*)")
MODULE = re.compile(r"(?<![\w.])(?:kafka_s3|tools)(?:\.[A-Za-z_]\w*)+")
IMPORTED = re.compile(r"(?:\bpython3?\s+-m\s+|\bfrom\s+|^\s*import\s+)((?:kafka_s3|tools)(?:\.\w+)*)", re.MULTILINE)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
FENCE = re.compile(r"^\s*(```|~~~)")


def documents(root: Path = ROOT) -> list[Path]:
    named = [root / name for name in ("README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "bench/README.md")]
    return [p for p in named if p.exists()] + sorted((root / "docs").glob("*.md"))


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile defines (rule lines, not recipes, variables or special targets)."""
    targets: set[str] = set()
    for line in makefile.read_text().splitlines():
        rule = re.match(r"^([A-Za-z0-9_][\w.\- ]*?)\s*:(?![:=])", line)
        if rule:
            targets.update(rule.group(1).split())
    return targets


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not ``-`` or ``_``), spaces to ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def split_fences(text: str) -> tuple[list[str], list[str]]:
    """The document's prose lines and its fenced code lines."""
    prose: list[str] = []
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append(line)
    return prose, code


def anchors(text: str) -> set[str]:
    prose, _ = split_fences(text)
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose:
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _path_problem(token: str, source: Path, root: Path) -> str | None:
    """Why a backticked token that looks like a repository path names nothing (None: it exists, or is no path)."""
    token = token.strip("()[],;'\"").rstrip(".:")
    token = re.sub(r":\d+$", "", token)  # file.py:12
    if not token or TEMPLATE.search(token) or "=" in token or " " in token:
        return None
    first = token.split("/", 1)[0]
    if "/" not in token:
        if not token.endswith(".md") or token.startswith("."):
            return None
        candidates = [source.parent / token, root / token, root / "docs" / token]
    elif first in REPO_DIRS or ((root / first).exists() and not first.startswith(".")):
        candidates = [root / token]
    elif first in PACKAGE_DIRS:
        base = root / "src" / "kafka_s3" / token.rstrip("/")
        candidates = [base, base.with_name(base.name + ".py")]
    else:
        return None
    if any(c.exists() for c in candidates):
        return None
    return f"`{token}` does not exist"


def _module_problem(name: str, root: Path, attribute_allowed: bool) -> str | None:
    def is_module(dotted: str) -> bool:
        base = root / MODULE_HOMES[dotted.split(".")[0]] / Path(*dotted.split("."))
        return base.with_suffix(".py").exists() or (base / "__init__.py").exists()

    if is_module(name):
        return None
    parent = name.rpartition(".")[0]
    if attribute_allowed and parent and is_module(parent):
        return None
    return f"module `{name}` does not exist"


def _code_problems(code: str, source: Path, root: Path, targets: set[str], in_fence: bool) -> Iterator[str]:
    for target in MAKE.findall(code):
        if target not in targets:
            yield f"`make {target}`: the Makefile has no target {target!r}"
    for name in IMPORTED.findall(code):
        problem = _module_problem(name, root, attribute_allowed=False)
        if problem:
            yield problem
    if not in_fence:  # in a code span, any kafka_s3.x.y; fenced Python is checked by its imports only
        for name in MODULE.findall(code):
            problem = _module_problem(name, root, attribute_allowed=True)
            if problem:
                yield problem
    for token in code.split():
        problem = _path_problem(token, source, root)
        if problem:
            yield problem


def problems(text: str, source: Path, root: Path = ROOT, targets: set[str] | None = None) -> list[str]:
    """Everything ``text`` (the document at ``source``) names that does not exist, one line each."""
    if targets is None:
        targets = make_targets(root / "Makefile")
    found: list[str] = []
    prose, code = split_fences(text)
    for line in code:
        found.extend(_code_problems(line, source, root, targets, in_fence=True))
    for line in prose:
        for _, span in CODE_SPAN.findall(line):
            found.extend(_code_problems(span, source, root, targets, in_fence=False))
        bare = CODE_SPAN.sub("", line)
        for link in LINK.findall(bare) + IMAGE.findall(bare):
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):
                continue  # https:, mailto:
            path, _, anchor = link.partition("#")
            target = (source.parent / path).resolve()
            if path and not target.exists():
                found.append(f"link ({link}): {path} does not exist")
                continue
            if not anchor or (path and target.suffix != ".md"):
                continue
            if anchor not in anchors(target.read_text() if path else text):
                found.append(f"link ({link}): no heading of {target.name if path else source.name} has #{anchor}")
    return [f"{source.relative_to(root) if source.is_relative_to(root) else source}: {p}" for p in found]


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_link_module_and_make_target_a_document_names_exists(document: Path) -> None:
    assert problems(document.read_text(), document) == []


def test_the_checker_reports_a_planted_broken_link_anchor_path_module_and_make_target(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(".PHONY: demo\nVAR := 1\ndemo: venv\n\tpython -m x\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ops.md").write_text("# Operations\n\n## Exit codes: 0 to 8\n\n## Exit codes: 0 to 8\n")
    (tmp_path / "src" / "kafka_s3" / "core").mkdir(parents=True)
    (tmp_path / "src" / "kafka_s3" / "__init__.py").write_text("")
    (tmp_path / "src" / "kafka_s3" / "core" / "__init__.py").write_text("")
    (tmp_path / "src" / "kafka_s3" / "core" / "lean.py").write_text("")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "services.py").write_text("")
    source = tmp_path / "README.md"
    good = (
        "[ops](docs/ops.md#exit-codes-0-to-8-1) and [here](#kafka-s3), `docs/ops.md`, `core/lean`, `core/lean.py`,\n"
        "`core/formats/<name>.py`, `kafka_s3.core.lean.keep_pandas_unloaded()`, `make demo`, [w](https://x.org/y)\n"
        "`tools/services.py`, `tools.services.ensure_up()`, `setuptools.build_meta`\n"
        "# kafka-s3\n```bash\nmake demo BENCH_ARGS=--quick\npython -m kafka_s3.core.lean\n"
        "python -m tools.services up\n```\n"
    )
    assert problems(good, source, tmp_path) == []

    planted = {
        "[ops](docs/operations.md)": "docs/operations.md does not exist",
        "[ops](docs/ops.md#exit-codes)": "no heading of ops.md has #exit-codes",
        "[up](#nowhere)": "no heading of README.md has #nowhere",
        "`bench/run.py`": "`bench/run.py` does not exist",
        "`core/leaner.py`": "`core/leaner.py` does not exist",
        "`kafka_s3.devtools.services`": "module `kafka_s3.devtools.services` does not exist",
        "`tools.launcher.up`": "module `tools.launcher.up` does not exist",
        "```bash\npython -m tools.launcher up\n```": "module `tools.launcher` does not exist",
        "`tools/launcher.py`": "`tools/launcher.py` does not exist",
        "`make demos`": "the Makefile has no target 'demos'",
        "```\nmake venv\n```": "the Makefile has no target 'venv'",
        "```python\nfrom kafka_s3.spark.session import build_session\n```": "module `kafka_s3.spark.session`",
    }
    for text, expected in planted.items():
        found = problems(f"# kafka-s3\n\n{text}\n", source, tmp_path)
        assert len(found) == 1 and expected in found[0], (text, found)
