"""The action's ``gate-policy`` input names a file in the repository, read through the API at
the default branch (the workflow checks nothing out); ``--gate-policy`` and
``TRIAGE_GATE_POLICY`` stay local paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import runner
from bot.config import Settings
from bot.errors import ConfigError
from tests.support import FakeChatModel, guards_policy, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import NEEDS_REPLY

PATH = "policy/gate.json"


def _run(tmp_path: Path, env: dict[str, str]) -> runner.RunReport:
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = "The app crashes when I click save."
    base = {
        "GITHUB_TOKEN": "t",
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, payload)),
        "TRIAGE_DB": str(tmp_path / "t.db"),
        "TRIAGE_DRY_RUN": "true",
    }
    return runner.run_event(Settings.resolve({}, base | env))


@pytest.mark.parametrize("input_name", ["INPUT_GATE-POLICY", "INPUT_GATE_POLICY"])
def test_the_input_reads_the_policy_from_the_default_branch(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, input_name: str
) -> None:
    policy = guards_policy("fake-model", precision=0.95).model_copy(update={"name": "from-repo"})
    github.repo_files[("master", PATH)] = policy.model_dump_json()
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, {input_name: PATH})
    assert ("repo_file", f"{PATH}@master") in github.reads
    assert f"from-repo ({policy.version}, repository path {PATH})" in report.text
    assert "needs-refinement precision 95%" in report.text


def test_a_path_the_default_branch_does_not_hold_is_a_config_error(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    with pytest.raises(ConfigError, match="which the repository's default branch does not hold"):
        _run(tmp_path, {"INPUT_GATE_POLICY": PATH})


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.json", "a//b.json", "a/./b", "a\\b", ""])
def test_a_path_outside_the_repository_is_refused(path: str) -> None:
    env = {"INPUT_GATE_POLICY": path} if path else {"INPUT_GATE_POLICY": "a/\x1b.json"}
    with pytest.raises(ConfigError, match="path from the repository's root"):
        Settings.resolve({}, env)


def test_a_local_policy_wins_and_no_repository_read_is_made(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    local = tmp_path / "local.json"
    local.write_text(
        guards_policy("fake-model").model_copy(update={"name": "local"}).model_dump_json(),
        "utf-8",
    )
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, {"INPUT_GATE_POLICY": PATH, "TRIAGE_GATE_POLICY": str(local)})
    assert "local (policy@" in report.text
    assert not [r for r in github.reads if r[1].startswith(PATH)]
