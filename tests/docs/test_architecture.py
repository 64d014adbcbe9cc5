"""ARCHITECTURE.md stays true to the tree: its layer order holds for every import in ``bot/``,
the two pipelines (``bot/gate/``, ``bot/audit/``) never import each other, and its module table
names every package and module of ``bot/``, and nothing that is gone.

Both tables are read from ARCHITECTURE.md itself, so the document is the specification and this
test its check: a new module needs a row and a layer; an import that points up a layer fails
with the file, line and imported module named.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT

ARCHITECTURE = ROOT / "ARCHITECTURE.md"

_LAYER_ROW = re.compile(r"^\| (\d+) \| ([^|]+?) \| (.+) \|$")
_MODULE_ROW = re.compile(r"^\| `(bot/[^`]*)` \|")


@dataclass(frozen=True)
class Layer:
    """One row of ARCHITECTURE.md's layer table: its rank (0 = lowest), name and the paths it
    holds (``bot/x.py`` for a module, ``bot/x/`` for every module of a package)."""

    rank: int
    name: str
    paths: tuple[str, ...]


def layer_table(text: str) -> list[Layer]:
    """The rows of the table under ``## Layers`` in ``text``."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        match = _LAYER_ROW.match(line.strip())
        if match:
            paths = tuple(re.findall(r"`(bot/[^`]*)`", match[3]))
            layers.append(Layer(int(match[1]), match[2].strip(), paths))
    return layers


def module_rows(text: str) -> list[str]:
    """The ``bot/…`` paths in the first column of ARCHITECTURE.md's tables."""
    return [m[1] for line in text.splitlines() if (m := _MODULE_ROW.match(line.strip()))]


def source_files(root: Path) -> list[str]:
    """Every ``.py`` file under ``root/bot`` as a path relative to ``root`` (``bot/x/y.py``)."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "bot").rglob("*.py"))


def table_path(file: str, root: Path = ROOT) -> str:
    """How the module table names a source file: a package by its folder (``bot/clients/``,
    ``bot/``), a module by its file, a file of a folder that is no package (the migrations,
    which yoyo loads by path) by that folder."""
    if file.endswith("/__init__.py"):
        return file.removesuffix("__init__.py")
    folder = file.rpartition("/")[0]
    return file if (root / folder / "__init__.py").exists() else f"{folder}/"


def module_name(file: str) -> str:
    """``bot/clients/github_client.py`` → ``bot.clients.github_client``; ``bot/x/__init__.py``
    → ``bot.x``."""
    return file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def layer_of(file: str, layers: list[Layer]) -> Layer | None:
    """The layer holding ``file``: its own path, else the innermost package path listed."""
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for path in layer.paths:
            holds = path == file or (path.endswith("/") and file.startswith(path))
            if holds and (best is None or len(path) > best[0]):
                best = (len(path), layer)
    return best[1] if best else None


def imported_modules(tree: ast.Module, package: str, known: set[str]) -> list[tuple[int, str]]:
    """``(line, module)``, sorted and once each, for every ``bot`` module imported anywhere in
    ``tree`` (top level, inside functions, under ``TYPE_CHECKING``): ``from bot.x import y``
    counts as ``bot.x.y`` when that is a module, else ``bot.x``; relative imports are resolved
    against ``package``, the package the file is in."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "bot"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            if base.split(".")[0] != "bot":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if sub in known else base))
    return sorted(set(found))


def upward_imports(root: Path, layers: list[Layer]) -> list[str]:
    """Every import in ``root/bot`` from a lower layer to a higher one, and every file no layer
    holds, as messages naming the file, line and imported module."""
    files = source_files(root)
    by_module = {module_name(f): f for f in files}
    problems = []
    for file in files:
        own = layer_of(file, layers)
        if own is None:
            problems.append(f"{file}: in no layer of ARCHITECTURE.md's layer table")
            continue
        tree = ast.parse((root / file).read_text("utf-8"), filename=file)
        package = module_name(file).rpartition(".")[0] or "bot"
        if file.endswith("__init__.py"):
            package = module_name(file)
        for line, target in imported_modules(tree, package, set(by_module)):
            target_file = by_module.get(target)
            theirs = layer_of(target_file, layers) if target_file else None
            if theirs is not None and theirs.rank > own.rank:
                problems.append(
                    f"{file}:{line} imports {target} (layer {theirs.rank} {theirs.name}) "
                    f"from layer {own.rank} {own.name}"
                )
    return problems


PIPELINES = ("bot/gate/", "bot/audit/")
"""The pipeline packages: each imports only what sits below the pipelines, never the other."""


def cross_imports(root: Path, pipelines: tuple[str, ...] = PIPELINES) -> list[str]:
    """Every import in ``root/bot`` from one pipeline package into another, as messages naming
    the file, line and imported module."""
    files = source_files(root)
    by_module = {module_name(f): f for f in files}
    problems = []
    for file in files:
        own = next((p for p in pipelines if file.startswith(p)), None)
        if own is None:
            continue
        tree = ast.parse((root / file).read_text("utf-8"), filename=file)
        package = module_name(file).rpartition(".")[0]
        if file.endswith("__init__.py"):
            package = module_name(file)
        for line, target in imported_modules(tree, package, set(by_module)):
            target_file = by_module.get(target, "")
            other = next((p for p in pipelines if target_file.startswith(p)), None)
            if other is not None and other != own:
                problems.append(f"{file}:{line} imports {target} from the other pipeline")
    return problems


TEXT = ARCHITECTURE.read_text("utf-8")


def test_imports_only_point_down_the_layers() -> None:
    assert upward_imports(ROOT, layer_table(TEXT)) == []


def test_the_pipelines_never_import_each_other() -> None:
    assert cross_imports(ROOT) == []


def test_the_cross_check_catches_an_import_between_pipelines(tmp_path: Path) -> None:
    """Top-level, function-level and relative imports from one pipeline into the other are
    named; an import of a shared module below them is not."""
    package = tmp_path / "bot"
    for folder in ("gate", "audit"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "report.py").write_text("")
    (package / "gate" / "a.py").write_text("from bot.audit import b\nfrom bot import report\n")
    (package / "audit" / "b.py").write_text("def f():\n    from ..gate.a import x\n")
    assert cross_imports(tmp_path) == [
        "bot/audit/b.py:2 imports bot.gate.a from the other pipeline",
        "bot/gate/a.py:1 imports bot.audit.b from the other pipeline",
    ]


def test_the_layer_table_is_well_formed() -> None:
    layers = layer_table(TEXT)
    assert [layer.rank for layer in layers] == list(range(len(layers)))
    listed = [path for layer in layers for path in layer.paths]
    assert len(listed) == len(set(listed)), "a path is in two layers"
    assert [p for p in listed if not (ROOT / p).exists()] == [], "a layer lists what is gone"


def test_the_module_table_lists_every_package_and_module() -> None:
    rows = module_rows(TEXT)
    missing = [table_path(f) for f in source_files(ROOT) if table_path(f) not in rows]
    assert missing == [], "add a row to ARCHITECTURE.md's module table"


def test_the_module_table_has_no_stale_row() -> None:
    rows = module_rows(TEXT)
    assert len(rows) == len(set(rows)), "a module has two rows"
    assert [r for r in rows if not (ROOT / r).exists()] == [], "a row names what is gone"


def test_the_checks_catch_an_upward_import(tmp_path: Path) -> None:
    """The walk sees a function-level and a relative import one layer up, and a module placed
    in no layer, and names each."""
    package = tmp_path / "bot"
    (package / "clients").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "clients" / "__init__.py").write_text("")
    (package / "clients" / "port.py").write_text("def f():\n    from bot.flows import g\n")
    (package / "clients" / "rel.py").write_text("from ..flows import g\n")
    (package / "flows.py").write_text("from bot.clients import port\n")
    (package / "loose.py").write_text("import bot.flows\n")
    layers = [
        Layer(0, "low", ("bot/__init__.py", "bot/clients/")),
        Layer(1, "high", ("bot/flows.py",)),
    ]
    assert upward_imports(tmp_path, layers) == [
        "bot/clients/port.py:2 imports bot.flows (layer 1 high) from layer 0 low",
        "bot/clients/rel.py:1 imports bot.flows (layer 1 high) from layer 0 low",
        "bot/loose.py: in no layer of ARCHITECTURE.md's layer table",
    ]
