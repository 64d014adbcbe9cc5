"""Secrets never leave the process: no artefact of a run holds the GitHub token or the secret in
the Ollama URL, in dry runs, applied runs and failing runs alike.

Each run is the real ``triage-bot`` CLI (in process, so log records are captured) with a
GitHub-shaped token in ``GITHUB_TOKEN`` and ``INPUT_TOKEN`` and a secret in ``OLLAMA_HOST``'s
query (credentials, ``user:pass@``, are refused there: a row below).
Unreachable services (port 9) fail fast: retries are cut to one attempt, which changes how long
a failure takes, not what it says. Then every artefact is searched: stdout, stderr, the
exception, every log record, the step summary, the outputs file, and every file the run left
(the SQLite store with its WAL). The recorded cassettes are searched too.
"""

from __future__ import annotations

import logging
import re
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import bot.clients.github_client as github_client
from bot import runner
from bot.cli import main
from bot.config import Settings
from bot.retry import RetryPolicy
from tests.support import CASSETTES, cassette, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY

TOKEN = "ghp_" + "Zk4Qm8Tr2Vx6Wb1Nc5Hd9Jf3Lp7Gs0Ye4Ua8"  # the shape of a classic PAT
PASSWORD = "s3cret-Pw-7781"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: connection refused at once
OLLAMA = f"http://127.0.0.1:9/?token={PASSWORD}"
SECRETS = (TOKEN, PASSWORD)


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """One attempt per request and no pause between writes: failures come in milliseconds."""
    resolve = Settings.resolve.__func__  # type: ignore[attr-defined]

    def quick(cls: type[Settings], flags: Any, env: Any) -> Settings:
        settings: Settings = resolve(cls, flags, env)
        return replace(
            settings, model_retry=RetryPolicy(attempts=1), github_retries=0, github_backoff_s=0.0
        )

    monkeypatch.setattr(Settings, "resolve", classmethod(quick))
    monkeypatch.setattr(github_client, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)


def _payload(tmp_path: Path, name: str, command: str | None = None) -> str:
    """A real payload written to a file; ``command`` replaces an issue comment's body."""
    payload = load_webhook(name)
    if command is not None:
        payload["comment"]["body"] = command
    return str(write_payload(tmp_path, payload))


def _run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, args: list[str], **env: str
) -> tuple[int, str, dict[str, str]]:
    """Run the CLI with the secrets set; return the exit code, stdout + stderr, and every
    artefact by name (files decoded with ``errors="replace"``, which keeps ASCII intact)."""
    caplog.set_level(logging.DEBUG)
    full_env = {
        "GITHUB_TOKEN": TOKEN,
        "INPUT_TOKEN": TOKEN,
        "OLLAMA_HOST": OLLAMA,
        "GITHUB_API_URL": UNREACHABLE,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "outputs.txt"),
        "TRIAGE_DB": str(tmp_path / "store" / "triage.db"),
        **env,
    }
    result = CliRunner().invoke(main, args, env=full_env)
    artefacts = {"stdout": result.stdout, "stderr": result.stderr}
    if result.exc_info is not None:
        artefacts["exception"] = "".join(traceback.format_exception(*result.exc_info))
    artefacts["log text"] = caplog.text
    artefacts["log records"] = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records
    )
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file():
            artefacts[str(path.relative_to(tmp_path))] = path.read_bytes().decode(errors="replace")
    return result.exit_code, result.stdout + result.stderr, artefacts


@pytest.fixture
def no_repo_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository has no ``.github/triage-bot.yml`` (its read goes to the fake GitHub: the
    GitHub URL of these runs is unreachable on purpose)."""
    monkeypatch.setattr(runner, "make_github", lambda *a, **k: FakeGitHub())


def _without_masks(text: str) -> str:
    """``text`` less its ``::add-mask::`` lines: the runner reads them as commands and never
    shows them (they hand it the values to hide)."""
    return "\n".join(line for line in text.split("\n") if not line.startswith("::add-mask::"))


def _leaks(artefacts: dict[str, str]) -> list[str]:
    return [f"{secret[:6]}… in {name}" for name, text in artefacts.items() for secret in SECRETS
            if secret in (_without_masks(text) if name == "stdout" else text)]  # fmt: skip


def test_gate_dry_run_with_the_model_unreachable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_repo_file: None
) -> None:
    """The gate fails closed (validator-error) and its warning names the Ollama host without
    its secret; nothing holds a secret, and the dry run creates no store."""
    event = _payload(tmp_path, "issues.opened.18")
    code, text, artefacts = _run(
        tmp_path, caplog, ["run", "--dry-run", "--event-name", "issues", "--event-path", event]
    )
    assert code == 0, text
    assert "validator-error" in artefacts["stdout"]
    assert "http://127.0.0.1:9" in artefacts["stderr"]  # the host is echoed, redacted
    assert "label=validator-error" in artefacts["outputs.txt"]
    assert "store/triage.db" not in artefacts  # a dry run writes nothing, the store included
    assert _leaks(artefacts) == []


def test_gate_in_actions_mode_writes_warnings_as_workflow_commands(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_repo_file: None
) -> None:
    """With ``GITHUB_ACTIONS=true`` the fault goes to stdout as ``::warning``: still redacted."""
    event = _payload(tmp_path, "issues.opened.18")
    args = ["run", "--dry-run", "--event-name", "issues", "--event-path", event]
    code, text, artefacts = _run(tmp_path, caplog, args, GITHUB_ACTIONS="true")
    assert code == 0, text
    assert "::warning title=triage-bot::validator-error" in artefacts["stdout"]
    # the URL's secret is handed to the runner's masking before anything else is printed
    assert artefacts["stdout"].startswith(f"::add-mask::{PASSWORD}\n")
    assert _leaks(artefacts) == []


def test_applied_gate_records_a_decision_without_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A whole applied run on recorded traffic (the model answers, two label writes with the
    token) leaves a row in the store; neither the row nor anything else holds a secret."""
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY  # the body e2e_issues_opened's reply quotes
    event = str(write_payload(tmp_path, payload))
    args = ["run", "--event-name", "issues", "--event-path", event]
    env = {"OLLAMA_HOST": "http://127.0.0.1:11434", "GITHUB_API_URL": ""}  # as recorded
    with cassette("e2e_issues_opened") as cass:
        code, text, artefacts = _run(tmp_path, caplog, args, **env)
    assert code == 0, text
    assert cass.all_played
    assert "applied:  2 GitHub write request(s)" in artefacts["stdout"]
    assert "ready-for-dev" in artefacts["store/triage.db"] + artefacts.get(
        "store/triage.db-wal", ""
    )
    assert _leaks(artefacts) == []


@pytest.mark.parametrize(
    ("what", "args", "env"),
    [
        ("gate, GitHub unreachable", ["run", "--event-name", "issues"], {}),
        ("audit event, GitHub unreachable", ["run", "--event-name", "pull_request_target"], {}),
        ("command, GitHub unreachable", ["run", "--event-name", "issue_comment"], {}),
        ("manual audit", ["audit", "--repo", "Codertocat/Hello-World", "--pr", "2"], {}),
        ("backlog", ["backlog", "--repo", "Codertocat/Hello-World", "--limit", "1"], {}),
        ("malformed OLLAMA_HOST", ["run", "--event-name", "issues"],
         {"OLLAMA_HOST": f"triage:{PASSWORD}@127.0.0.1:9"}),
        ("malformed OLLAMA_HOST URL", ["run", "--event-name", "issues"],
         {"OLLAMA_HOST": f"ftp://triage:{PASSWORD}@127.0.0.1:9"}),
        ("OLLAMA_HOST with credentials", ["run", "--event-name", "issues"],
         {"OLLAMA_HOST": f"http://triage:{PASSWORD}@127.0.0.1:9"}),
    ],
)  # fmt: skip
def test_failing_runs_fail_clearly_without_secrets(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    what: str,
    args: list[str],
    env: dict[str, str],
) -> None:
    """Every failure is one ``error:`` line with its exit code (4: GitHub, 2: configuration),
    no traceback, and no secret in that line or anywhere else."""
    fixture = {"issues": "issues.opened.18", "pull_request_target": "pull_request.opened.0"}
    if args[0] == "run":
        name = fixture.get(args[-1], "issue_comment.created.0")
        command = "/triage" if name.startswith("issue_comment") else None
        args = [*args, "--event-path", _payload(tmp_path, name, command)]
    code, text, artefacts = _run(tmp_path, caplog, args, **env)
    assert code == (2 if "OLLAMA_HOST" in what else 4), text
    assert re.search(r"^triage-bot: error: ", artefacts["stderr"], re.MULTILINE), text
    assert "Traceback" not in text
    assert _leaks(artefacts) == [], what


CREDENTIAL_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,})\b"  # GitHub tokens
    r"|[a-z][a-z0-9+.-]*://[^\s/@:]+:[^\s/@]+@"  # URL with user:password
)


def _headers(node: Any) -> list[str]:
    """Every header name under any ``headers`` mapping of a cassette, lower-cased."""
    if isinstance(node, dict):
        own = [str(k).lower() for k in node.get("headers", {}) or {}]
        return own + [h for v in node.values() for h in _headers(v)]
    if isinstance(node, list):
        return [h for item in node for h in _headers(item)]
    return []


@pytest.mark.parametrize("path", sorted(CASSETTES.glob("*.yaml")), ids=lambda p: p.name)
def test_cassettes_hold_no_credentials(path: Path) -> None:
    """A recorded cassette holds no token, no URL password and no Authorization header, so
    re-recording with real credentials cannot leak them into the repository unnoticed."""
    text = path.read_text(encoding="utf-8")
    assert not any(secret in text for secret in SECRETS)
    assert CREDENTIAL_SHAPES.findall(text) == []
    headers = _headers(yaml.safe_load(text))
    assert not {"authorization", "proxy-authorization", "cookie", "x-api-key"} & set(headers)
