"""How much of ``bot/`` is prose: `.venv/bin/python benchmarks/docstrings.py [--top N] [ROOT]`.

- **docstring share**: the lines of every module, class and function docstring that
  :func:`ast.get_docstring` finds, counted as the source lines its string literal spans (the
  quotes included), over all lines of ``bot/**/*.py``.
- **comment share**: the lines that hold a ``#`` comment (on its own line or after code), over
  the same lines.
- **words per sentence** in those docstrings, median and 90th percentile. A sentence ends at
  ``.``, ``!`` or ``?`` before a space, at a blank line, and before a list item (``- ``) or a
  section field (``name:`` opening a line, as under ``Args:``); a word is a run of non-space
  characters with a letter or a digit in it. Section headings (``Raises:``) and the lines of a
  table or a drawing (three spaces inside a line, or box-drawing characters) are no sentences.

Prints the figures for the whole package, then one row per module, worst first: the most
docstring lines over the share the package aims at (:data:`TARGET`, 15% of the module's lines),
so a small ``__init__.py`` that is all docstring ranks below a long module a third of which is.
ROOT is the tree to measure (default: the one this script sits in).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import statistics
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

TARGET = 0.15
"""The docstring share the package aims at."""

_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|vs|cf)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+"  # a full stop, then space
    r"|\n\s*\n"  # a blank line
    r"|\n(?=\s*(?:[-*] |[A-Za-z_][\w.]*(?: \([^)]*\))?: ))"  # a list item or a section field
)
_WORD = re.compile(r"\S*[A-Za-z0-9]\S*")
_NOT_PROSE = re.compile(r"^\s*[A-Z]\w*:\s*$|\S {3,}\S|[│├└┌┐┘┬┴┼─►]", re.MULTILINE)


@dataclass
class Module:
    """One file's counts."""

    path: str
    lines: int = 0
    docstring_lines: int = 0
    comment_lines: int = 0
    sentence_words: list[int] = field(default_factory=list)

    @property
    def docstring_share(self) -> float:
        return self.docstring_lines / self.lines if self.lines else 0.0

    @property
    def over_target(self) -> float:
        """Docstring lines beyond :data:`TARGET` of the module's lines."""
        return self.docstring_lines - TARGET * self.lines

    @property
    def comment_share(self) -> float:
        return self.comment_lines / self.lines if self.lines else 0.0


def docstring_nodes(tree: ast.Module) -> list[tuple[ast.Constant, str]]:
    """Each docstring's string literal and its text, as :func:`ast.get_docstring` finds them."""
    owners: list[ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = [tree]
    owners += [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    found = []
    for owner in owners:
        text = ast.get_docstring(owner)
        if text is None:
            continue
        first = owner.body[0]
        assert isinstance(first, ast.Expr)
        assert isinstance(first.value, ast.Constant)
        found.append((first.value, text))
    return found


def sentences(text: str) -> list[int]:
    """The word count of each sentence of a docstring's text."""
    prose = "\n".join("" if _NOT_PROSE.search(line) else line for line in text.splitlines())
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\0"), prose)
    counts = [len(_WORD.findall(part)) for part in _SENTENCE_END.split(protected)]
    return [count for count in counts if count]


def comment_lines(source: str) -> int:
    """How many lines hold a ``#`` comment."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return len({token.start[0] for token in tokens if token.type == tokenize.COMMENT})


def measure(path: Path, root: Path) -> Module:
    """One file's lines, docstring lines, comment lines and sentence lengths."""
    source = path.read_text("utf-8")
    module = Module(path.relative_to(root).as_posix(), lines=len(source.splitlines()))
    for literal, text in docstring_nodes(ast.parse(source)):
        assert literal.end_lineno is not None
        module.docstring_lines += literal.end_lineno - literal.lineno + 1
        module.sentence_words += sentences(text)
    module.comment_lines = comment_lines(source)
    return module


def p90(values: list[int]) -> float:
    """The 90th percentile (inclusive method; the one value for a single value)."""
    if len(values) < 2:
        return float(values[0]) if values else 0.0
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).parent.parent)
    parser.add_argument("--top", type=int, default=0, help="show only the first N modules")
    args = parser.parse_args()
    root: Path = args.root.resolve()
    modules = [measure(path, root) for path in sorted((root / "bot").rglob("*.py"))]

    lines = sum(m.lines for m in modules)
    docstring_lines = sum(m.docstring_lines for m in modules)
    comments = sum(m.comment_lines for m in modules)
    words = [count for m in modules for count in m.sentence_words]
    print(f"bot/: {len(modules)} files, {lines:,} lines")
    print(f"docstrings: {docstring_lines:,} lines, {docstring_lines / lines:.1%}")
    print(f"comments:   {comments:,} lines, {comments / lines:.1%}")
    print(
        f"docstring words: {sum(words):,} in {len(words):,} sentences; per sentence "
        f"median {statistics.median(words):g}, p90 {p90(words):g}"
    )
    print()
    over = f"over {TARGET:.0%}"
    print(f"{'module':<38} {'lines':>6} {'docstr':>7} {over:>9} {'comment':>8} {'words p50':>10}")
    ranked = sorted(modules, key=lambda m: (-m.over_target, m.path))
    for m in ranked[: args.top or None]:
        median = statistics.median(m.sentence_words) if m.sentence_words else 0
        print(
            f"{m.path:<38} {m.lines:>6} {m.docstring_share:>7.1%} {m.over_target:>9.0f} "
            f"{m.comment_share:>8.1%} {median:>10g}"
        )


if __name__ == "__main__":
    main()
