"""The README and docs/ stay true to the code: the contract table, the exit codes, the env
variables, the commands; and the README stays a page a user reads first, linked to the rest."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bot.audit.contract import SECTIONS
from bot.config import ENV_VARS
from bot.errors import BotError
from tests.support import ROOT, user_docs

README = (ROOT / "README.md").read_text("utf-8")
DOCS = user_docs()
"""README.md and docs/*.md: where a thing that moved out of the README is looked for."""

PAGES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "evals" / "README.md",
     *(ROOT / "docs").glob("*.md")]
)  # fmt: skip
"""Every page written for people (ARCHITECTURE.md is checked by test_architecture.py)."""


def test_contract_table_is_printed_from_the_single_definition() -> None:
    for section in SECTIONS:
        assert f"| {section.number} | {section.title} | {section.rule} |" in DOCS


def test_every_exit_code_is_documented() -> None:
    codes = {cls.exit_code for cls in _subclasses(BotError)} | {0}
    for code in codes:
        assert f"\n| {code} |" in README, code


def test_every_user_facing_env_variable_is_documented() -> None:
    for variables in ENV_VARS.values():
        plain = [v for v in variables if not v.startswith("INPUT_")]
        assert any(f"`{v}`" in README for v in plain), variables


def _subclasses(cls: type) -> set[type[BotError]]:
    found: set[type[BotError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_comment_command_is_in_the_readme() -> None:
    from bot.commands.handlers import COMMANDS
    from bot.commands.spec import usage_line

    for spec in COMMANDS.values():
        assert f"| `{usage_line(spec)}` | {spec.where} | {spec.help} |" in README


def test_every_cli_command_has_help() -> None:
    from click.testing import CliRunner

    from bot.cli import main

    for name in main.commands:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage:" in result.stdout
        assert f"triage-bot {name}" in README or name == "run", name


def test_the_configuration_table_is_printed_from_the_settings_table() -> None:
    """README.md holds what `scripts/settings_table.py` prints (paste it after a change)."""
    from bot.setting_spec import readme_table
    from bot.settings_table import SETTINGS

    assert readme_table(SETTINGS) in README


def test_the_default_model_is_the_best_measured_one() -> None:
    """A default that was never measured is not offered: action.yml and the settings table
    default to the weights the project measures every version with (a run in
    evals/figures.json, under the shipped policy that names the tag), and the action to the
    audit format that model was measured with (JSON)."""
    import json

    import yaml

    from bot.policy_file import load_policy
    from bot.settings_table import DEFAULT_OLLAMA_MODEL

    inputs = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))["inputs"]
    assert inputs["validator-model"]["default"] == DEFAULT_OLLAMA_MODEL
    shipped = [load_policy(p) for p in (ROOT / "bot" / "gate" / "policies").glob("*.json")]
    (policy,) = [p for p in shipped if DEFAULT_OLLAMA_MODEL in p.same_model_as]
    assert policy.measured is not None
    runs = json.loads((ROOT / "evals" / "figures.json").read_text("utf-8"))["runs"]
    measured = {r["model"] for r in runs if r["policy"] == policy.name}
    assert policy.measured.model in measured
    assert inputs["audit-model"]["default"] == ""  # the validator's model
    assert inputs["audit-format"]["default"] == "json"


# --- the README is read first; docs/ holds the rest ----------------------------------------------
def test_the_readme_is_short_and_shows_installation_early() -> None:
    lines = README.splitlines()
    assert len(lines) < 450
    assert "## Install on a repository" in lines[:80]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {target for target, _ in _links(ROOT / "README.md")}
    for page in [
        *(ROOT / "docs").glob("*.md"),
        ROOT / "CONTRIBUTING.md",
        ROOT / "evals" / "README.md",
    ]:
        assert page.relative_to(ROOT).as_posix() in linked, page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_a_heading(page: Path) -> None:
    for target, anchor in _links(page):
        path = (page.parent / target).resolve() if target else page
        assert path.is_file(), f"{page.name}: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {target}#{anchor}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_points_at_issue_numbers_or_work_stops(page: Path) -> None:
    """A reader has neither the project's issue tracker nor its work log: no "issue 14", no
    "stop 24", no "this stop"."""
    text = page.read_text("utf-8")
    assert not re.search(r"\b([Ii]ssues?[ -]#?\d+|[Ss]tops? \d+|this stop)\b", text)


def test_no_code_points_at_issue_numbers() -> None:
    """Nor do the code, the tests, the benchmarks and the scripts: a note says what it refers to
    (a GitHub issue in a fixture is ``#1``)."""
    files = [ROOT / "pyproject.toml", ROOT / ".ci" / "run", *(ROOT / "scripts").iterdir()]
    for folder in ("bot", "tests", "benchmarks"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".json", ".sh"}]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(files)
        if path.is_file() and path != Path(__file__)
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if re.search(r"\b[Ii]ssues?[ -]#?\d+\b", line)
    ]
    assert not found, "\n".join(found)


_MD = MarkdownIt("commonmark").enable("table")


def _links(page: Path) -> list[tuple[str, str]]:
    """(path, anchor) of every link in ``page`` that stays in the repository, as markdown-it-py
    reads them (code spans and fences hold none)."""
    found = []
    for token in _MD.parse(page.read_text("utf-8")):
        for child in token.children or []:
            href = str(child.attrs.get("href", "")) if child.type == "link_open" else ""
            if href and not re.match(r"[a-z]+:", href):
                target, _, anchor = href.partition("#")
                found.append((target, anchor))
    return found


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives ``page``'s headings: the heading's text lower-cased, without
    punctuation but ``-`` and ``_``, spaces as ``-``; a repeated one gets ``-1``, ``-2`` …"""
    tokens = _MD.parse(page.read_text("utf-8"))
    seen: dict[str, int] = {}
    for opening, inline in pairwise(tokens):
        if opening.type == "heading_open":
            text = "".join(
                c.content for c in inline.children or [] if c.type in ("text", "code_inline")
            )
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_the_doctor_sample_names_the_migrations_the_package_ships() -> None:
    """docs/operations.md shows doctor on a PostgreSQL store: its count is the package's."""
    from bot.history.migrate import shipped

    text = (ROOT / "docs" / "operations.md").read_text("utf-8")
    (count,) = re.findall(r"PostgreSQL .* \(\d+ of (\d+) migrations applied", text)
    assert int(count) == len(shipped())


def test_the_first_commands_sample_output_is_what_the_bot_prints() -> None:
    """The README's sample of the first command is a real run's output: a dry run on the same
    payload, the same model name and a loopback model server prints the same lines in the
    same order, with the same prompt version and policy."""
    from click.testing import CliRunner

    from bot.cli import main
    from bot.clients.embedded import DEFAULT_MODEL
    from tests.support.fake_openai import fake_openai_server

    sample = re.search(r"### What the first command prints\n\n```\n(.*?)```", README, re.S)
    assert sample is not None
    with fake_openai_server() as server:
        result = CliRunner().invoke(
            main,
            ["run", "--dry-run", "--event-name", "issues",
             "--event-path", str(ROOT / "examples" / "issues.opened.json")],
            env={"TRIAGE_OPENAI_BASE_URL": server.url,
                 "TRIAGE_VALIDATOR_MODEL": DEFAULT_MODEL.name},
        )  # fmt: skip
    assert result.exit_code == 0, result.output

    def labelled(text: str) -> dict[str, str]:
        return {line.split(":")[0]: line for line in text.splitlines()}

    shown, printed = labelled(sample.group(1)), labelled(result.stdout)
    assert list(shown) == list(printed)
    for label in ("triage-bot", "model", "policy", "label", "comment", "dry run"):
        assert shown[label] == printed[label]


_DOTTED = re.compile(r"(?<![\w./-])bot(?:\.[A-Za-z_]\w*)+")
"""A dotted name in the package: ``bot.gate.policy.decide``."""
_PATH = re.compile(r"(?<![\w./-])((?:\.?[A-Za-z_][\w-]*/)+[\w.*{},-]*)")
"""A path with a folder: ``bot/gate/plan.py``, ``docs/storage.md``, ``gate/stats.py``,
``evals/results/r-{1,2}.json`` (a shell's braces)."""
_TOP = {"bot", "docs", "tests", "scripts", "benchmarks", "schema", "evals", "cassettes",
        "examples", ".ci"}  # fmt: skip
"""The tree's folders a path from the repository root starts with."""
_IN_BOT = {p.name for p in (ROOT / "bot").rglob("*") if p.is_dir() and p.name != "__pycache__"}
"""The folders under bot/ a path written from inside it starts with (``gate/stats.py``)."""
_PLACEHOLDERS = {"cassettes/NAME.yaml", "evals/results/NAME.json"}


def _named_object_exists(dotted: str) -> bool:
    """Whether ``bot.x.y.Name.attr`` is a module, then attributes (fields of a dataclass or a
    pydantic model count) of it."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        break
    for name in parts[cut:]:
        fields = {
            **getattr(found, "__dataclass_fields__", {}),
            **getattr(found, "model_fields", {}),
            **getattr(found, "__annotations__", {}),
        }
        if hasattr(found, name):
            found = getattr(found, name)
        elif name in fields:
            found = None
        else:
            return False
    return True


def _path_exists(path: str) -> bool:
    """Whether a path from the repository root, or from a folder under ``bot/`` for one that
    starts with such a folder's name, names a file or folder of the tree (``*`` as in a glob,
    ``{a,b}`` as in a shell: each; ``{name}``, an f-string's field: any)."""
    braces = re.search(r"\{([^{}]*)\}", path)
    if braces and "," not in braces.group(1):
        return _path_exists(path[: braces.start()] + "*" + path[braces.end() :])
    if braces:
        return all(
            _path_exists(path[: braces.start()] + choice + path[braces.end() :])
            for choice in braces.group(1).split(",")
        )
    if path.split("/")[0] in _TOP:
        return (ROOT / path).exists() or any(ROOT.glob(path))
    return any((ROOT / "bot").glob(path)) or any((ROOT / "bot").glob(f"**/{path}"))


def test_every_module_and_file_the_docs_and_docstrings_name_exists() -> None:
    """A ``bot.x.y`` name or a ``bot/x.py`` path in bot/ (docstrings and comments), docs/, the
    README, ARCHITECTURE.md or CONTRIBUTING.md points at something the tree has."""
    sources = [*sorted((ROOT / "bot").rglob("*.py")), *PAGES, ROOT / "ARCHITECTURE.md"]
    stale = []
    for source in sources:
        for number, line in enumerate(source.read_text("utf-8").splitlines(), 1):
            where = f"{source.relative_to(ROOT)}:{number}"
            stale += [
                f"{where}: {match}"
                for match in _DOTTED.findall(line)
                if not _named_object_exists(match)
            ]
            stale += [
                f"{where}: {path}"
                for path in (match.rstrip(".,") for match in _PATH.findall(line))
                if path.split("/")[0] in _TOP | _IN_BOT
                and path not in _PLACEHOLDERS
                and not _path_exists(path)
            ]
    assert not stale, "names nothing in the tree:\n" + "\n".join(stale)
