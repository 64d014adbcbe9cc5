"""The action's install step and its lock: an upgrade runs the code it pins.

Install: the step in action.yml is run as GitHub runs it (bash -eo pipefail, inputs through its
env:) on a copy of the action's files, with a fake `python3` first on PATH that records every
venv and pip call instead of installing (the real install takes about 25 s on 2 cores; the
wheel it builds is built, installed and run in tests/action/test_wheel.py). The venv key is the name
of
the folder the step reports.

Lock: requirements.lock pins every runtime dependency at a version pyproject.toml accepts, with
hashes, and this environment (built by scripts/setup.sh from the lock) has those versions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support import ROOT

LOCK = ROOT / "requirements.lock"
SCRIPT = ROOT / "scripts" / "action_venv.sh"

# What the copy of the action holds: the installed files and some that are not installed.
ACTION_FILES = (
    "bot",
    "scripts",
    "pyproject.toml",
    "README.md",
    "requirements.lock",
    "action.yml",
    "tests/conftest.py",
)

FAKE_PYTHON = r"""#!/usr/bin/env bash
# A stand-in for python3 and for a venv's python: records venv and pip calls in $FAKE_LOG.
set -euo pipefail
if [ "${1:-}" = "-c" ]; then
  echo "cpython-311 /fake/python3"
elif [ "${1:-}" = "-m" ] && [ "${2:-}" = "venv" ]; then
  mkdir -p "$3/bin"
  cp "$0" "$3/bin/python"
  echo "venv $3" >> "$FAKE_LOG"
elif [ "${1:-}" = "-m" ] && [ "${2:-}" = "pip" ]; then
  shift 2
  echo "pip $*" >> "$FAKE_LOG"
  sleep "${FAKE_PIP_SLEEP:-0}"
  if [ "$1" = "install" ]; then
    printf '#!/bin/sh\nexit 0\n' > "$(dirname "$0")/triage-bot"
    chmod +x "$(dirname "$0")/triage-bot"
  fi
  case " $* " in
    *" ${FAKE_PIP_FAIL:-no such argument} "*) echo "fake pip: failing on purpose" >&2; exit 1 ;;
  esac
else
  echo "fake python: unexpected arguments: $*" >&2
  exit 1
fi
"""


# --- install step -------------------------------------------------------------------------


class Runner:
    """Runs the copied action's install step with the fake python and a private tool cache."""

    def __init__(self, tmp_path: Path) -> None:
        self.action = tmp_path / "action"
        self.cache = tmp_path / "tool-cache"
        self.log = tmp_path / "fake.log"
        self.tmp = tmp_path
        for name in ACTION_FILES:
            source, target = ROOT / name, self.action / name
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
            elif source.exists():  # tolerant, so the tests also run against older layouts
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        fake_bin = tmp_path / "fake-bin"
        fake_bin.mkdir()
        (fake_bin / "python3").write_text(FAKE_PYTHON, "utf-8")
        (fake_bin / "python3").chmod(0o755)
        self.env = {
            "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp_path / "home"),
            "RUNNER_TOOL_CACHE": str(self.cache),
            "FAKE_LOG": str(self.log),
        }

    def step(self) -> tuple[str, dict[str, str]]:
        """The install step's script and env:, as the copied action.yml defines them."""
        action = yaml.safe_load((self.action / "action.yml").read_text("utf-8"))
        (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "venv"]
        env = {}
        for name, value in step.get("env", {}).items():
            value = value.replace("${{ github.action_path }}", str(self.action))
            assert "${{" not in value, value
            env[name] = value
        return step["run"], env

    def start(self, n: int = 0, **extra: str) -> subprocess.Popen[str]:
        script, step_env = self.step()
        path = self.tmp / f"step-{n}.sh"
        path.write_text(script, "utf-8")
        output = self.tmp / f"output-{n}"
        output.write_text("", "utf-8")
        env = {**self.env, **step_env, "GITHUB_OUTPUT": str(output), **extra}
        return subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def run(self, **extra: str) -> Path:
        """Run the step; return the venv folder it reports."""
        proc = self.start(**extra)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        return self.venv_of(0)

    def venv_of(self, n: int) -> Path:
        output = (self.tmp / f"output-{n}").read_text("utf-8")
        (line,) = [line for line in output.splitlines() if line.startswith("bin=")]
        return Path(line.removeprefix("bin=")).parent

    def calls(self) -> list[str]:
        return self.log.read_text("utf-8").splitlines() if self.log.exists() else []

    def forget_calls(self) -> None:
        self.log.unlink(missing_ok=True)

    def key(self) -> str:
        """The key the step uses: the venv folder's name is venv-KEY."""
        name = self.run().name
        assert name.startswith("venv-"), name
        return name.removeprefix("venv-")


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path)


def _append(text: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(text)

    return change


@pytest.mark.parametrize(
    "name",
    [
        "bot/audit/contract.py",
        "bot/prompts/validator.md",
        "bot/prompts/audit_json.md",
        "bot/gate/verdict.py",
        "bot/commands/handlers.py",
        "bot/cli.py",
        "bot/audit/new_module.py",
        "pyproject.toml",
        "README.md",
        "requirements.lock",
        "scripts/action_venv.sh",
    ],
)
def test_changing_an_installed_file_changes_the_venv_key(runner: Runner, name: str) -> None:
    before = runner.key()
    _append("\n# changed\n")(runner.action / name)
    assert runner.key() != before, f"{name} changed but the action would re-use its old venv"


def test_a_file_under_bot_audit_and_a_prompt_each_change_the_key(runner: Runner) -> None:
    """The issue's done-when item, spelled out: one audit module, then one prompt."""
    keys = [runner.key()]
    audit = runner.action / "bot" / "audit" / "selection.py"
    audit.write_text(audit.read_text("utf-8").replace("200", "201"), "utf-8")
    keys.append(runner.key())
    prompt = runner.action / "bot" / "prompts" / "validator.md"
    prompt.write_text(prompt.read_text("utf-8") + "\nAnswer carefully.\n", "utf-8")
    keys.append(runner.key())
    assert len(set(keys)) == 3, keys


@pytest.mark.parametrize(
    "name",
    ["tests/conftest.py", "action.yml", "bot/__pycache__/cli.cpython-311.pyc", "notes.txt"],
)
def test_a_file_that_is_not_installed_leaves_the_key_alone(runner: Runner, name: str) -> None:
    before = runner.key()
    _append("\n# changed\n")(runner.action / name)
    assert runner.key() == before


def test_print_key_is_the_key_the_step_uses_and_installs_nothing(runner: Runner) -> None:
    result = subprocess.run(
        ["bash", str(runner.action / "scripts" / "action_venv.sh"), "--print-key"],
        env=runner.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    printed = result.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{32}", printed), result.stdout
    assert runner.calls() == []
    assert not runner.cache.exists()
    assert runner.key() == printed


def test_the_interpreter_is_part_of_the_key(runner: Runner) -> None:
    before = runner.key()
    fake = Path(runner.env["PATH"].split(os.pathsep)[0]) / "python3"
    fake.write_text(fake.read_text("utf-8").replace("cpython-311", "cpython-312"), "utf-8")
    assert runner.key() != before


def test_a_fresh_venv_installs_the_lock_with_hashes_then_the_package_without_deps(
    runner: Runner,
) -> None:
    venv = runner.run()
    lock = runner.action / "requirements.lock"
    assert runner.calls() == [
        f"venv {venv}",
        f"pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r {lock}",
        "pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation "
        f"{runner.action}",
        "pip check --disable-pip-version-check",
    ]
    assert venv.parent == runner.cache / "triage-bot"


def test_a_complete_venv_is_reused(runner: Runner) -> None:
    first = runner.run()
    runner.forget_calls()
    assert runner.run() == first
    assert runner.calls() == []


def test_a_venv_without_its_key_file_is_rebuilt(runner: Runner) -> None:
    """A venv left by an install that died after pip wrote bin/triage-bot is not trusted."""
    venv = runner.run()
    (venv / ".triage-bot-key").unlink(missing_ok=True)
    (venv / "left-over").write_text("from the broken install", "utf-8")
    runner.forget_calls()
    assert runner.run() == venv
    assert f"venv {venv}" in runner.calls()
    assert not (venv / "left-over").exists()
    assert (venv / ".triage-bot-key").read_text("utf-8").strip() == venv.name.removeprefix("venv-")


def test_a_venv_with_another_key_is_rebuilt(runner: Runner) -> None:
    venv = runner.run()
    (venv / ".triage-bot-key").write_text("0" * 32 + "\n", "utf-8")
    (venv / "left-over").write_text("not this venv", "utf-8")
    runner.forget_calls()
    assert runner.run() == venv
    assert f"venv {venv}" in runner.calls()
    assert not (venv / "left-over").exists()


def test_an_install_that_fails_midway_is_not_trusted_next_time(runner: Runner) -> None:
    proc = runner.start(FAKE_PIP_FAIL="install")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0, out
    runner.forget_calls()
    venv = runner.run()
    assert f"venv {venv}" in runner.calls(), "the half-built venv was trusted"


def test_two_jobs_on_one_host_build_the_venv_once(runner: Runner) -> None:
    jobs = [runner.start(n, FAKE_PIP_SLEEP="0.3") for n in (1, 2)]
    for job in jobs:
        out, _ = job.communicate(timeout=60)
        assert job.returncode == 0, out
    assert runner.venv_of(1) == runner.venv_of(2)
    assert [c for c in runner.calls() if c.startswith("venv ")] == [f"venv {runner.venv_of(1)}"]


def test_the_action_scripts_pass_shellcheck() -> None:
    shellcheck = Path(sys.executable).parent / "shellcheck"
    found = str(shellcheck) if shellcheck.exists() else shutil.which("shellcheck")
    assert found, "shellcheck is not installed: pip install -e '.[test]'"
    scripts = [SCRIPT, ROOT / "scripts" / "lock.sh", ROOT / "scripts" / "setup.sh"]
    result = subprocess.run([found, *map(str, scripts)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- lock -------------------------------------------------------------------------------


def _lock_entries() -> list[tuple[Requirement, list[str]]]:
    """(requirement, sha256 hashes) of each entry of requirements.lock."""
    entries, current = [], ""
    for line in LOCK.read_text("utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        current += " " + stripped.removesuffix("\\")
        if not stripped.endswith("\\"):
            requirement, _, _ = current.partition(" --hash=")
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})\b", current)
            entries.append((Requirement(requirement.strip()), hashes))
            current = ""
    assert not current.strip(), "requirements.lock ends inside an entry"
    return entries


def _pinned(requirement: Requirement) -> str:
    (spec,) = requirement.specifier
    assert spec.operator == "==", requirement
    return spec.version


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def test_every_lock_entry_is_pinned_with_hashes() -> None:
    entries = _lock_entries()
    assert len(entries) > 10
    for requirement, hashes in entries:
        _pinned(requirement)
        assert hashes, f"{requirement} has no hash: pip --require-hashes would refuse the lock"


def test_the_lock_pins_every_dependency_at_an_accepted_version() -> None:
    project = _pyproject()
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    pins: dict[str, list[str]] = {}
    for requirement, _ in _lock_entries():
        pins.setdefault(canonicalize_name(requirement.name), []).append(_pinned(requirement))
    for line in wanted:
        dependency = Requirement(line)
        versions = pins.get(canonicalize_name(dependency.name))
        assert versions, f"{dependency.name} is not in requirements.lock: run scripts/lock.sh"
        for version in versions:
            assert dependency.specifier.contains(version, prereleases=True), (
                f"requirements.lock pins {dependency.name}=={version}, pyproject.toml wants "
                f"{dependency}: run scripts/lock.sh"
            )


def test_the_lock_holds_no_extra() -> None:
    """The action talks to Ollama: the embedded and test extras stay off the runner."""
    locked = {canonicalize_name(r.name) for r, _ in _lock_entries()}
    for extra in ("embedded", "test"):
        for line in _pyproject()["project"]["optional-dependencies"][extra]:
            assert canonicalize_name(Requirement(line).name) not in locked, (extra, line)


def test_this_environment_has_the_locked_versions() -> None:
    """scripts/setup.sh installs the lock first: the suite runs on the versions the action
    installs (an extra that moved a locked package would show here)."""
    environment = default_environment()
    moved = []
    for requirement, _ in _lock_entries():
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != _pinned(requirement):
            moved.append(f"{requirement.name}: locked {_pinned(requirement)}, here {installed}")
    assert not moved, "run scripts/setup.sh: " + "; ".join(moved)


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module → the bot/ files importing it, for every import in bot/ that is
    neither the standard library nor bot itself (module- and function-level alike)."""
    import ast

    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "bot" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


TYPE_MODEL_FILES = {"bot/types/features.py", "bot/types/model_file.py", "bot/types/fit.py"}
"""Where a type model is applied (numpy, imported when it is: not in the lock yet) and fitted."""


def test_every_module_the_package_imports_comes_with_the_lock_or_an_extra() -> None:
    """The action's venv holds the lock and triage-bot, nothing else: a module bot/ imports
    that no locked distribution provides fails on the runner alone (the development venv
    has the extras). The embedded extra is imported only by the embedded backend and the type
    model's modules (numpy), the types-fit extra only by the type model's fit."""
    locked = {canonicalize_name(r.name) for r, _ in _lock_entries()}
    embedded = {
        canonicalize_name(Requirement(line).name)
        for line in _pyproject()["project"]["optional-dependencies"]["embedded"]
    }
    types_fit = {
        canonicalize_name(Requirement(line).name)
        for line in _pyproject()["project"]["optional-dependencies"]["types-fit"]
    }
    providers = metadata.packages_distributions()
    missing = {}
    for module, files in _third_party_imports().items():
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if dists & locked:
            continue
        if dists & embedded and files <= {"bot/clients/embedded.py",
                                          "bot/clients/grammar_shortlist.py",
                                          "bot/clients/prompt_cache.py",
                                          *TYPE_MODEL_FILES}:  # fmt: skip
            continue
        if dists & types_fit and files <= {"bot/types/fit.py"}:
            continue
        missing[module] = sorted(files)
    assert not missing, f"imported by bot/ but in no locked distribution: {missing}"
