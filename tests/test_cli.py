"""`triage-bot` as a maintainer runs it: exit codes, output, step summary and outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.settings_table import DEFAULT_OLLAMA_MODEL
from tests.support import ROOT, cassette, load_webhook, write_payload
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY

EXAMPLE = str(ROOT / "examples" / "issues.opened.json")
OLLAMA = "http://127.0.0.1:11434"


def _complete_example(tmp_path: Path) -> str:
    """The example payload with its body completed (tests/support/replies.py): the VALID cassettes
    (ollama_chat_valid, e2e_issues_opened) quote that body, and the bot's own checks pass."""
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    return str(write_payload(tmp_path, payload, "complete.json"))


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_prints_the_plan_on_the_ollama_backend(tmp_path: Path) -> None:
    with cassette("ollama_chat_valid") as cass:
        code, out, _ = _run(
            [
                "run",
                "--dry-run",
                "--event-name",
                "issues",
                "--event-path",
                _complete_example(tmp_path),
                "--ollama-host",
                OLLAMA,
            ]
        )
    assert code == 0
    # the model only: a dry run without a token reads no repository file (it may be offline)
    assert cass.play_count == 1
    assert "issues.opened Codertocat/Hello-World#1" in out
    assert "verdict:  VALID" in out
    # the reason shown is the bot's, built from the quotes it found, not the model's prose;
    # Ollama's tag of the embedded default's weights gets its shipped policy and its figures,
    # measured through the embedded backend, and the plan says so
    assert "reason:   Found: problem (“README.md says to comitt your changes”)" in out
    assert "policy:   qwen2.5-coder-1.5b (policy@" in out
    assert (
        "shipped); measured on the GGUF through llama.cpp "
        "(qwen2.5-coder-1.5b-instruct-q4_k_m.gguf), used here for qwen2.5-coder:1.5b, the same "
        "base model, needs-refinement precision 76%" in out
    )
    assert "misspelled word" not in out
    assert "changes:  +ready-for-dev" in out
    assert "tokens:   312 prompt / 31 output" in out
    # Ollama does not say which prompt tokens came from its cache: not shown as 0
    assert "312 prompt tokens, evaluated / reused not reported; 31 output tokens" in out
    assert f"model:    {DEFAULT_OLLAMA_MODEL} (validator@" in out  # the default tag
    assert "nothing written to GitHub" in out


def test_a_prompt_ollama_cut_shows_its_token_counts_in_the_summary(tmp_path: Path) -> None:
    """A prompt over num_ctx fails closed like a truncated reply: validator-error,
    exit 0 with a warning, and the token counts in the step summary."""
    summary, outputs = tmp_path / "summary.md", tmp_path / "output.txt"
    with cassette("ollama_chat_prompt_cut"):
        code, out, err = _run(
            ["run", "--dry-run", "--event-name", "issues",
             "--event-path", _complete_example(tmp_path), "--ollama-host", OLLAMA],
            {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)},
        )  # fmt: skip
    assert code == 0
    assert "verdict:  ERROR (prompt_too_long)" in out
    # a fault has no verdict: the step output names it as action.yml documents
    assert outputs.read_text() == "verdict=ERROR\nlabel=validator-error\n"
    assert "tokens:   4096 prompt / 31 output" in out
    assert "validator-error on #1 (prompt_too_long)" in err
    text = summary.read_text("utf-8")
    assert "| validator error \\(prompt\\_too\\_long\\) |" in text
    assert "| 4096/31 |" in text
    assert "| 4096 | not reported | not reported | 31 |" in text  # the failed call, listed
    assert "prompt of 4096 tokens + num\\_predict 160 exceeds num\\_ctx 4096" in text


def test_applied_run_writes_labels_summary_and_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary, outputs = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": _complete_example(tmp_path),
        "GITHUB_TOKEN": "test-token-not-real",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "OLLAMA_HOST": OLLAMA,
    }
    import bot.clients.github_client as gc

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    with cassette("e2e_issues_opened") as cass:
        code, out, _ = _run(["run"], env)
    assert code == 0, out
    assert cass.all_played
    assert "applied:  2 GitHub write request(s)" in out
    assert outputs.read_text() == "verdict=VALID\nlabel=ready-for-dev\n"
    text = summary.read_text()
    assert "| VALID | `ready-for-dev` |" in text
    assert "This repository is public" in text
    assert "test-token-not-real" not in out + text


@pytest.mark.parametrize(
    ("args", "env", "code", "needle"),
    [
        (["run", "--event-path", EXAMPLE], {}, 2, "no event name"),
        (["run", "--event-name", "issues"], {}, 2, "no event payload"),
        (
            ["run", "--event-name", "issues", "--event-path", "/nonexistent.json"],
            {},
            3,
            "event file not found",
        ),
        (["run", "--event-name", "issues", "--event-path", EXAMPLE], {}, 2, "no GitHub token"),
        (
            ["run", "--dry-run", "--event-name", "issues", "--event-path", EXAMPLE],
            {"TRIAGE_MODEL_TIMEOUT": "soon"},
            2,
            "invalid value for TRIAGE_MODEL_TIMEOUT",
        ),
        (
            ["run", "--event-name", "issues", "--event-path", EXAMPLE],
            {"TRIAGE_DRY_RUN": "maybe"},
            2,
            "invalid value for TRIAGE_DRY_RUN / --dry-run",
        ),
    ],
)
def test_errors_have_clear_messages_and_exit_codes(
    args: list[str], env: dict[str, str], code: int, needle: str
) -> None:
    got, out, err = _run(args, env)
    assert got == code
    assert needle in err
    assert "Traceback" not in out + err


def test_malformed_payload_exits_3(tmp_path: Path) -> None:
    payload = load_webhook("issues.opened.18")
    del payload["issue"]["number"]
    path = write_payload(tmp_path, payload)
    code, _, err = _run(["run", "--dry-run", "--event-name", "issues", "--event-path", str(path)])
    assert code == 3
    assert "malformed issues payload: issue.number" in err


@pytest.mark.parametrize(
    ("event", "name", "needle"),
    [
        ("push", "pull_request.opened.0", "not handled"),
        ("pull_request_target", "pull_request.closed.3", "does not run the audit"),
        ("pull_request", "pull_request.converted_to_draft.5", "does not run the audit"),
        ("issues", "issues.labeled.9", "issues.labeled does not run the gate"),
        ("issues", "issues.edited.7", "neither the title nor the body"),
    ],
)
def test_other_events_are_skipped_with_exit_0(
    tmp_path: Path, event: str, name: str, needle: str
) -> None:
    summary = tmp_path / "summary.md"
    path = write_payload(tmp_path, load_webhook(name))
    code, out, _ = _run(
        ["run", "--event-name", event, "--event-path", str(path)],
        {"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert code == 0
    assert out.startswith("triage-bot: skipped:")
    assert needle in out
    assert len(out.strip().splitlines()) == 1
    assert needle in render(summary.read_text()).text  # the summary is markdown


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["--version"]])
def test_every_command_has_help(args: list[str]) -> None:
    code, out, _ = _run(args)
    assert code == 0
    assert out.strip()


def test_skipped_event_defines_every_output(tmp_path: Path) -> None:
    outputs = tmp_path / "out.txt"
    path = write_payload(tmp_path, load_webhook("issues.labeled.9"))
    code, _, _ = _run(
        ["run", "--event-name", "issues", "--event-path", str(path)],
        {"GITHUB_OUTPUT": str(outputs)},
    )
    assert code == 0
    assert outputs.read_text().splitlines() == [
        "verdict=",
        "label=",
        "audits-accepted=0",
        "audits-rejected=0",
        "skipped=true",
    ]


def test_validator_error_is_annotated_in_actions() -> None:
    with cassette("ollama_model_404"):
        code, out, _ = _run(
            ["run", "--dry-run", "--event-name", "issues", "--event-path", EXAMPLE,
             "--ollama-host", OLLAMA],
            {"GITHUB_ACTIONS": "true"},
        )  # fmt: skip
    assert code == 0
    assert "label:    validator-error" in out
    assert "::warning title=triage-bot::validator-error on #1 (model_not_found)" in out


@pytest.mark.parametrize(
    ("payload_action", "needle"),
    [({}, "action must be a lower-case word"), (5, "action must be"), (None, "action must")],
)
def test_odd_actions_are_malformed_payloads(
    tmp_path: Path, payload_action: object, needle: str
) -> None:
    payload = load_webhook("issues.opened.18")
    payload["action"] = payload_action
    path = write_payload(tmp_path, payload)
    code, _, err = _run(["run", "--dry-run", "--event-name", "issues", "--event-path", str(path)])
    assert code == 3
    assert needle in err


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"OLLAMA_HOST": "junk"}, "invalid value for OLLAMA_HOST / --ollama-host"),
        ({"TRIAGE_MODEL_PATH": "/nonexistent.gguf"}, "no such GGUF file"),
        ({"TRIAGE_MODEL_TIMEOUT": "nan"}, "finite number"),
        ({"TRIAGE_MODEL_TIMEOUT": "inf"}, "finite number"),
        (
            {
                "OLLAMA_HOST": "http://ollama.internal:11434",
                "TRIAGE_OPENAI_BASE_URL": "http://h/v1",
            },
            "TRIAGE_OPENAI_BASE_URL / --openai-base-url (action input openai-base-url) and "
            "OLLAMA_HOST / --ollama-host (action input ollama-host) each choose a model backend",
        ),
    ],
)
def test_bad_model_settings_fail_the_run(env: dict[str, str], needle: str) -> None:
    code, _, err = _run(
        ["run", "--dry-run", "--event-name", "issues", "--event-path", EXAMPLE], env
    )
    assert code == 2
    assert needle in err


def test_token_echoed_by_github_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.cli import _redact

    monkeypatch.setenv("GITHUB_TOKEN", "tok-abcdef-123456")
    assert _redact("Bad credentials for tok-abcdef-123456") == "Bad credentials for ***"


def test_manual_audit_dry_run_prints_selection_outcome_and_comment() -> None:
    with cassette("e2e_audit_manual_dry_run") as cass:
        code, out, _ = _run(
            ["audit", "--dry-run", "--repo", "Codertocat/Hello-World", "--pr", "2",
             "--ollama-host", OLLAMA, "--audit-format", "markdown"],  # the recorded reply
        )  # fmt: skip
    assert code == 0, out
    assert cass.all_played
    assert "audit Codertocat/Hello-World#2 at ec26c3e57ca3 (markdown format)" in out
    assert "src/limits.py:7-18" in out
    assert "ACCEPTED  FIX / High  retried: no" in out
    assert "skipped poetry.lock: matches skip glob '*.lock'" in out
    assert "<!-- triage-bot:audit -->" in out
    assert "dry run:  nothing stored or posted" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "--repo", "not a repo", "--pr", "2", "--dry-run"], "--repo must be OWNER/NAME"),
        (["audit", "--repo", "o/r", "--pr", "2"], "no GitHub token"),
    ],
)
def test_manual_audit_bad_arguments(args: list[str], needle: str) -> None:
    code, _, err = _run(args)
    assert code == 2
    assert needle in err


def test_gate_decision_is_stored_and_a_hand_set_label_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.clients.github_client as gc
    from bot.history.store import Store

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    db = tmp_path / "triage.db"
    env = {
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": OLLAMA,
        "TRIAGE_DB": str(db),
        "INPUT_BOT_LOGIN": "github-actions[bot]",  # as the action passes it for its token
    }
    example = _complete_example(tmp_path)
    with cassette("e2e_issues_opened"):
        code, _, _ = _run(["run", "--event-name", "issues", "--event-path", example], env)
    assert code == 0
    last = Store(db).last_gate("Codertocat/Hello-World", 1)
    assert last is not None
    assert (last["label"], last["verdict"], last["event"]) == (
        "ready-for-dev",
        "VALID",
        "issues.opened",
    )
    edited = load_webhook("issues.edited.7")
    edited["changes"] = {"body": {"from": "old"}}
    edited["issue"]["labels"] = [{"name": "bug"}, {"name": "needs-refinement"}]
    edited["issue"]["body"] = "It still crashes."  # changed text: not a replay
    path = write_payload(tmp_path, edited)
    # GitHub, not the store, says who added the label: one read of the events
    with cassette("github_issue_events_hand_set") as cass:
        code, out, _ = _run(["run", "--event-name", "issues", "--event-path", str(path)], env)
    assert code == 0
    assert cass.play_count == 2  # the repository file (404: none), then the events
    assert "a maintainer set 'needs-refinement' by hand" in out


def test_dry_run_writes_nothing_to_the_store(tmp_path: Path) -> None:
    from bot.history.store import Store

    db = tmp_path / "triage.db"
    with cassette("ollama_chat_valid"):
        code, _, _ = _run(
            ["run", "--dry-run", "--event-name", "issues", "--event-path",
             _complete_example(tmp_path), "--ollama-host", OLLAMA, "--db", str(db)],
        )  # fmt: skip
    assert code == 0
    assert Store(db).last_gate("Codertocat/Hello-World", 1) is None
