"""A model server that echoes the API key: no form of it leaves the bot.

A real ``triage-bot run`` process (an ``issues`` event, then a ``pull_request`` event) talks
to a loopback OpenAI-compatible server that puts the key it was sent, in one form, into its
gate reply and its audit; the run writes through the real PyGithub client to a loopback GitHub
and into a real store. Every text that leaves the bot is searched for every form
:func:`bot.urls.secret_forms` covers: the PR comment, the review, the author comment, the
store's rows, stdout, stderr and the step summary.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from bot.audit.contract import render_sections
from bot.urls import secret_forms
from tests.support.concurrent_triggers import new_issue, new_pull, rig
from tests.support.fake_openai import Answer, Received, completion
from tests.support.replies import reply

KEY = "sk-Test/key+With=odd_chars-0123456789"
FORMS: dict[str, Callable[[str], str]] = {
    "as written": lambda k: k,
    "hex": lambda k: k.encode().hex(),
    "HEX": lambda k: k.encode().hex().upper(),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64url, unpadded": lambda k: base64.urlsafe_b64encode(k.encode()).decode().rstrip("="),
    "percent-encoded": lambda k: quote(k, safe=""),
    "in a JSON string": lambda k: json.dumps(k)[1:-1],
}


def _echo(form: Callable[[str], str]) -> Callable[[Received], Answer]:
    def answer(request: Received) -> Answer:
        if request.path.endswith("/models"):
            return Answer(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        echoed = form(key)
        if "response_format" in (request.body or {}):  # the gate
            quote = f"the token {echoed} fails"  # not in the issue: the plan names it
            return completion(reply("NEEDS_REFINEMENT", f"Saw {echoed}.", problem=quote))
        audit = render_sections(
            {
                "bottom_line": "value_1 to value_40 are plain constant assignments.",
                "verified_defects": "None",
                "non_blocking_risks": "None",
                "assumptions": f"The names are used elsewhere; the server saw {echoed}.",
                "future_improvements": "None",
                "verdict": "GO",
                "confidence": "Medium",
            }
        )
        return completion(audit)

    return answer


@pytest.mark.parametrize("name", list(FORMS))
def test_a_key_the_server_echoes_reaches_no_output(tmp_path: Path, name: str) -> None:
    summary = tmp_path / "summary.md"
    db = tmp_path / "triage.db"
    with rig(tmp_path, str(db), delay_s=0.0, answer=_echo(FORMS[name])) as r:
        r.extra_env |= {"TRIAGE_OPENAI_API_KEY": KEY, "GITHUB_STEP_SUMMARY": str(summary)}
        r.extra_env |= {"TRIAGE_REVIEW_COMMENTS": "true"}
        new_issue(r, 1)
        new_pull(r, 2, "a" * 40)
        outputs = r.race(["issues"], 1) + r.race(["pull_request"], 2)
        with r.github.lock:
            posted = json.dumps([r.github.comments, r.github.reviews])
        assert r.model.received, "the model was never asked"
    with sqlite3.connect(db) as conn:
        stored = json.dumps(
            [conn.execute(f"select * from {t}").fetchall() for t in ("gate_decisions", "audits")]
        )
    texts = {"GitHub": posted, "the store": stored, "output": "\n".join(outputs)}
    texts["the step summary"] = summary.read_text("utf-8") if summary.exists() else ""
    assert "***" in stored  # the echo was there, and was replaced
    for where, text in texts.items():
        for form in secret_forms(KEY):
            assert form not in text, (where, form)


def test_an_echoed_key_reaches_no_eval_file(tmp_path: Path) -> None:
    """eval's report and saved replies are files the bot writes: redacted like the rest."""
    from click.testing import CliRunner

    from bot.cli import main
    from tests.support.fake_openai import fake_openai_server

    issue = {"id": "a-1", "kind": "bug", "title": "Crash", "body": "The app crashes.",
             "expected": "NEEDS_REFINEMENT", "rationale": "asked"}  # fmt: skip
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps(issue) + "\n", "utf-8")
    out, saved = tmp_path / "report.json", tmp_path / "replies.jsonl"
    with fake_openai_server(_echo(FORMS["hex"])) as server:
        result = CliRunner().invoke(
            main,
            ["eval", "--only", "gate", "--issues", str(issues), "--out", str(out),
             "--save-replies", str(saved), "--openai-base-url", server.url, "--model", "fake"],
            env={"TRIAGE_OPENAI_API_KEY": KEY},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    texts = [out.read_text("utf-8"), saved.read_text("utf-8"), result.output]
    assert "***" in saved.read_text("utf-8")
    for text in texts:
        for form in secret_forms(KEY):
            assert form not in text, form


def test_pygithubs_own_log_lines_never_reach_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """PyGithub logs redirect URLs and retried answers at INFO on a handler of its own; the
    bot's GitHub client leaves none of them on the runner's log."""
    import logging

    import bot.clients.github_client  # noqa: F401  (importing it is what quiets the logger)

    for name in ("github", "github.Requester", "github.GithubRetry"):
        logging.getLogger(name).warning("redirected to https://x:%s@evil.example/", "s3cret")
    assert "s3cret" not in capfd.readouterr().err
