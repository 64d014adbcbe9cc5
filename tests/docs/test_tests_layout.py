"""The tests are laid out as CONTRIBUTING.md says: a folder per package of ``bot/``, helpers in
``tests/support/`` only, benchmarks and scripts importing nothing of the tests but that, and
every ``tests/…`` path a file names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support import ROOT

TESTS = ROOT / "tests"
SUPPORT = TESTS / "support"
_FOLDERS = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
_TEST_FOLDERS = _FOLDERS - {"data", "support"}


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py"))


def test_test_folders_hold_tests_only_and_support_holds_no_test() -> None:
    for name in _TEST_FOLDERS:
        names = {p.name for p in _modules(TESTS / name)}
        assert "__init__.py" in names, name
        assert all(n == "__init__.py" or n.startswith("test_") for n in names), (name, names)
    top = {p.name for p in _modules(TESTS)}
    assert all(n in {"__init__.py", "conftest.py"} or n.startswith("test_") for n in top), top
    assert not [p for p in SUPPORT.glob("test_*.py")]


def test_every_package_of_bot_has_its_test_folder_and_contributing_names_each() -> None:
    packages = {p.parent.name for p in (ROOT / "bot").glob("*/__init__.py")} - {"prompts"}
    assert packages <= _TEST_FOLDERS
    contributing = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    for name in _FOLDERS:
        assert f"`tests/{name}/`" in contributing, name


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_benchmarks_scripts_and_support_import_only_the_support_package_of_the_tests() -> None:
    """What benchmarks and scripts share with the tests is ``tests.support`` (documented in
    CONTRIBUTING.md): never a test module, whose names are the tests' own to change."""
    files = [*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")]
    files += _modules(SUPPORT)
    wrong = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted(files)
        for module in sorted(_imported(path))
        if (module == "tests" or module.startswith("tests."))
        and not (module == "tests.support" or module.startswith("tests.support."))
    ]
    assert not wrong, "\n".join(wrong)


_TESTS_PATH = re.compile(r"(?<![\w./-])tests/[\w./*-]*[\w*/]")


def test_every_tests_path_a_file_names_exists() -> None:
    """A ``tests/…`` path in the tests, benchmarks, scripts, cassettes or docs names a file or
    folder of the tree (``::test`` ids and globs included)."""
    files = [
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "scripts").iterdir(),
        *(ROOT / "cassettes").glob("*.yaml"),
        *(ROOT / "docs").glob("*.md"),
        *ROOT.glob("*.md"),
        ROOT / "evals" / "README.md",
        ROOT / ".ci" / "run",
    ]
    stale = [
        f"{path.relative_to(ROOT)}:{number}: {match}"
        for path in sorted(p for p in files if p.is_file())
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        for match in _TESTS_PATH.findall(line)
        if not (ROOT / match).exists() and not any(ROOT.glob(match))
    ]
    assert not stale, "names nothing in the tree:\n" + "\n".join(stale)
