"""Fault matrix rows (faults and idempotency): model faults, GitHub faults,
crashes between steps and replays, each with its defined outcome.

Model faults run the real Ollama client against recorded ``/api/chat`` answers (cassettes) or a
real socket, and the embedded backend against a broken GGUF; each goes through the gate (must
fail closed: ``validator-error``) and through a whole audit (must leave no row and post nothing).
GitHub faults run PyGithub against recorded answers. Crashes and replays run the whole handler
against :class:`tests.support.fake_github.FakeGitHub`, which keeps state between runs like GitHub
does.
"""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bot import runner
from bot.audit.auditor import Auditor
from bot.audit.plan import apply_audit, plan_audit
from bot.audit.pr_comment import MARKER
from bot.chat import ChatModel
from bot.clients.embedded import EmbeddedChatModel
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import ChangedFile, PullRef
from bot.clients.ollama_client import OllamaChatModel
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS, Settings
from bot.errors import BotError, GitHubUnavailable
from bot.gate.labels import LABEL_FOR_VERDICT, plan_labels
from bot.gate.plan import apply_gate
from bot.gate.validator import Validator
from bot.history.store import Store
from bot.retry import RetryPolicy
from tests.support import FakeChatModel, cassette, load_webhook, make_plan, policy_file
from tests.support.fake_github import FakeGitHub
from tests.support.reliability import Row
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE, NEEDS_REPLY, VALID_REPLY

REPO = "Codertocat/Hello-World"
HOST = "http://127.0.0.1:11434"
HEAD = "a" * 40
SOURCE = [f"limit_{i} = {i} * WINDOW" for i in range(1, 31)]
VALID = VALID_REPLY  # stands on COMPLETE_BODY (tests/support/replies.py)
GOOD_AUDIT = (
    "## 1. Bottom line\nlimit_1 to limit_30 scale WINDOW linearly.\n\n## 2. Verified defects\n"
    "None\n\n## 3. Non-blocking risks\nNone\n\n## 4. Assumptions\nWINDOW is positive.\n\n"
    "## 5. Future improvements\nNone\n\n## 6. Verdict\nGO\n\n## 7. Confidence\nMedium\n"
)


@contextlib.contextmanager
def slow_drip_server() -> Iterator[str]:
    """A loopback HTTP server that sends headers, then one byte every 0.5 s, forever: httpx's
    per-read timeout never fires, only a wall-clock deadline does. Yields its base URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    stop = threading.Event()

    def drip() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            conn.sendall(b"Content-Length: 100000\r\n\r\n{")
            while not stop.wait(0.5):
                try:
                    conn.sendall(b" ")
                except OSError:
                    break
            conn.close()

    threading.Thread(target=drip, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()


def _ollama(host: str = HOST, *, timeout_s: float = 30, attempts: int = 3) -> OllamaChatModel:
    return OllamaChatModel(
        host=host, model="gemma3:270m", timeout_s=timeout_s, retry=RetryPolicy(attempts, 0, 0)
    )


def _gate(model: ChatModel) -> str:
    """Judge the complete issue (tests/support/replies.py) that the VALID cassettes' replies
    quote."""
    decision = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000).judge(
        COMPLETE_TITLE, COMPLETE_BODY
    )
    kind = f" ({decision.error_kind})" if decision.error_kind else ""
    return f"gate={decision.label.name}{kind}"


def pr_github() -> FakeGitHub:
    """A fake GitHub holding PR #2 with one added 30-line file."""
    github = FakeGitHub()
    patch = "@@ -0,0 +1,30 @@\n" + "\n".join(f"+{line}" for line in SOURCE)
    github.files[2] = [ChangedFile(path="src/limits.py", status="added", patch=patch)]
    github.contents["src/limits.py"] = SOURCE
    github.heads[2] = HEAD
    return github


def _audit(model: ChatModel) -> str:
    github, store = pr_github(), Store(":memory:")
    try:
        plan = plan_audit(
            PullRef(REPO, 2, HEAD), github, Auditor(model, AUDITOR_OPTIONS), audit_format="markdown"
        )
        apply_audit(plan, github, store)
        rows = store.db["audits"].count
    finally:
        store.close()
    posts = sum(1 for w in github.writes if w[0].endswith("_comment"))
    return f"audit rows={rows} posts={posts}"


def _model_fault(name: str) -> Callable[[], str]:
    def observe() -> str:
        with cassette(name):
            gate = _gate(_ollama())
        with cassette(name, repeat=True):
            audit = _audit(_ollama())
        return f"{gate}; {audit}"

    return observe


def _unreachable() -> str:
    dead = "http://127.0.0.1:9"
    return f"{_gate(_ollama(dead, attempts=1))}; {_audit(_ollama(dead, attempts=1))}"


def _read_timeout() -> str:
    with slow_drip_server() as host:
        gate = _gate(_ollama(host, timeout_s=1, attempts=1))
        audit = _audit(_ollama(host, timeout_s=1, attempts=1))
    return f"{gate}; {audit}"


def _broken_gguf() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "broken.gguf"
        path.write_bytes(b"GGUF" + bytes(range(256)) * 64)
        model = EmbeddedChatModel(model_path=path, n_ctx=8192)
        return f"{_gate(model)}; {_audit(model)}"


def _failed(exc: BotError, requests: int) -> str:
    return f"{type(exc).__name__} (exit {exc.exit_code}) after {requests} request(s)"


def _github(max_wait_s: float = 60.0) -> PyGithubClient:
    return PyGithubClient(
        token="test-token-not-real",
        retries=2,
        backoff_s=0.0,
        seconds_between_writes=0.0,
        max_rate_limit_wait_s=max_wait_s,
    )


def _label_write(name: str) -> Callable[[], str]:
    def observe() -> str:
        plan = make_plan(plan_labels([], LABEL_FOR_VERDICT["VALID"]))
        with cassette(name) as cass:
            try:
                apply_gate(plan, _github())
            except BotError as exc:
                return _failed(exc, cass.play_count)
            return f"label applied after {cass.play_count} request(s)"

    return observe


def _find_comment(name: str, max_wait_s: float = 60.0) -> Callable[[], str]:
    def observe() -> str:
        with cassette(name) as cass:
            try:
                found = _github(max_wait_s).find_bot_comment(REPO, 2, MARKER)
            except BotError as exc:
                return _failed(exc, cass.play_count)
            return f"read ({found}) after {cass.play_count} request(s)"

    return observe


def _post_comment(name: str) -> Callable[[], str]:
    def observe() -> str:
        with cassette(name) as cass:
            try:
                action = _github().upsert_comment(REPO, 2, None, MARKER)
            except BotError as exc:
                return _failed(exc, cass.play_count)
            return f"comment {action} after {cass.play_count} request(s)"

    return observe


def _run(
    github: FakeGitHub,
    model: FakeChatModel,
    tmp: str,
    name: str,
    payload: Any,
    *,
    gate_policy: Path | None = None,
) -> Any:
    path = Path(tmp) / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    settings = Settings(
        github_token="t",
        event_name=name,
        event_path=path,
        db_path=Path(tmp) / "t.db",
        audit_format="markdown",  # the queued replies are markdown
        gate_policy=gate_policy,
    )
    with (
        mock.patch.object(runner, "make_github", return_value=github),
        mock.patch.object(runner, "make_chat_model", return_value=model),
    ):
        return runner.run_event(settings)


def _count(tmp: str, table: str) -> int:
    store = Store(Path(tmp) / "t.db")
    try:
        return store.db[table].count
    finally:
        store.close()


def _pr_payload() -> dict[str, Any]:
    payload = load_webhook("pull_request.opened.0")
    payload["pull_request"]["head"]["sha"] = HEAD
    return payload


def _replay_issue() -> str:
    github, model = FakeGitHub(), FakeChatModel().enqueue(VALID)
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            _run(github, model, tmp, "issues", payload)
        rows = _count(tmp, "gate_decisions")
    labels = github.issue_labels[payload["issue"]["number"]]
    return (
        f"labels={labels} writes={len(github.writes)} model calls={len(model.history)} rows={rows}"
    )


def _replay_pr() -> str:
    github, model = pr_github(), FakeChatModel().enqueue(GOOD_AUDIT)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            _run(github, model, tmp, "pull_request", _pr_payload())
        rows = _count(tmp, "audits")
    comments, writes, calls = len(github.bot_comments(2)), len(github.writes), len(model.history)
    return f"comments={comments} writes={writes} model calls={calls} rows={rows}"


def _crash_before_store() -> str:
    github, model = FakeGitHub(), FakeChatModel().enqueue(VALID, VALID)
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    with tempfile.TemporaryDirectory() as tmp:
        # the process "dies" after labelling, before the store write
        with (
            mock.patch.object(Store, "record_gate", side_effect=KeyboardInterrupt),
            contextlib.suppress(KeyboardInterrupt),
        ):
            _run(github, model, tmp, "issues", payload)
        _run(github, model, tmp, "issues", payload)
        rows = _count(tmp, "gate_decisions")
    return f"labels={github.issue_labels[payload['issue']['number']]} rows={rows}"


def _post_fails_after_store() -> str:
    github, model = pr_github(), FakeChatModel().enqueue(GOOD_AUDIT, GOOD_AUDIT)
    github.fail("upsert_comment", GitHubUnavailable("comment: GitHub answered 502", 502))
    with tempfile.TemporaryDirectory() as tmp:
        with contextlib.suppress(GitHubUnavailable):
            _run(github, model, tmp, "pull_request", _pr_payload())
        first = _count(tmp, "audits")
        _run(github, model, tmp, "pull_request", _pr_payload())
        rows, weeks = _count(tmp, "audits"), _count(tmp, "audit_weeks")
    comments = len(github.bot_comments(2))
    return (
        f"rows after fault={first}; after next run: comments={comments} rows={rows} weeks={weeks}"
    )


def _author_comment_fails_after_labels() -> str:
    """The author comment's POST fails after the label is on the issue. No decision
    row is written, so the next event judges again: the label is in place, the comment is
    posted, and only once. The run names a policy measured for the fake model
    (:func:`tests.support.policy_file`), so the comment is asked for: without one no comment
    is attempted, and the fault never happens."""
    github, model = FakeGitHub(), FakeChatModel().enqueue(NEEDS_REPLY, NEEDS_REPLY)
    github.fail("post_comment", GitHubUnavailable("comment: GitHub answered 502", 502))
    payload = load_webhook("issues.opened.18")  # 10 words: needs refinement
    with tempfile.TemporaryDirectory() as tmp:
        measured = Path(policy_file(Path(tmp), model.name))
        with contextlib.suppress(GitHubUnavailable):
            _run(github, model, tmp, "issues", payload, gate_policy=measured)
        first = _count(tmp, "gate_decisions")
        _run(github, model, tmp, "issues", payload, gate_policy=measured)
        rows = _count(tmp, "gate_decisions")
    number = payload["issue"]["number"]
    comments = len(github.bot_comments(number))
    return (
        f"rows after fault={first}; after next run: labels={github.issue_labels[number]} "
        f"comments={comments} rows={rows}"
    )


FAIL_CLOSED = "gate=validator-error ({}); audit rows=0 posts=0"

ROWS: list[Row] = [
    Row("model fault", "Ollama unreachable", FAIL_CLOSED.format("model_unavailable"), _unreachable),
    Row("model fault", "Ollama 404 model not pulled", FAIL_CLOSED.format("model_not_found"),
        _model_fault("ollama_model_404")),
    Row("model fault", "Ollama 400 bad request", FAIL_CLOSED.format("model_request_rejected"),
        _model_fault("ollama_400")),
    Row("model fault", "Ollama 500 on every try", FAIL_CLOSED.format("model_unavailable"),
        _model_fault("ollama_500")),
    Row("model fault", "Ollama 503 busy on every try", FAIL_CLOSED.format("model_unavailable"),
        _model_fault("ollama_503_busy")),
    Row("model fault", "Ollama 503 busy, then an answer", "gate=ready-for-dev",
        lambda: _with_cassette("ollama_503_then_ok", lambda: _gate(_ollama()))),
    Row("model fault", "Ollama read timeout (one byte per 0.5 s)",
        FAIL_CLOSED.format("model_unavailable"), _read_timeout, max_ms=10_000),
    Row("model fault", "empty content", FAIL_CLOSED.format("unparseable"),
        _model_fault("ollama_chat_empty")),
    Row("model fault", "done_reason=length", FAIL_CLOSED.format("truncated"),
        _model_fault("ollama_chat_truncated")),
    Row("model fault", "invalid JSON (prose)", FAIL_CLOSED.format("unparseable"),
        _model_fault("ollama_chat_prose")),
    Row("model fault", "thinking text before the JSON", FAIL_CLOSED.format("unparseable"),
        _model_fault("ollama_chat_thinking")),
    Row("model fault", "llama.cpp load failure (broken GGUF)", FAIL_CLOSED.format("model_load"),
        _broken_gguf),
    Row("github fault", "401 bad credentials on a label write",
        "GitHubAuthError (exit 4) after 1 request(s)", _label_write("github_bad_credentials")),
    Row("github fault", "403 primary rate limit on a GET, reset passed",
        "read (None) after 2 request(s)", _find_comment("github_rate_limit_primary_then_ok")),
    Row("github fault", "403 primary rate limit, reset hours away",
        "GitHubRateLimited (exit 4) after 1 request(s)",
        _find_comment("github_rate_limit_primary_far_reset"), max_ms=5_000),
    Row("github fault", "403 secondary rate limit + Retry-After on the comment POST",
        "comment created after 2 request(s)",
        _post_comment("github_rate_limit_secondary_post_comment"), max_ms=5_000),
    Row("github fault", "404 issue deleted", "GitHubNotFound (exit 4) after 2 request(s)",
        _label_write("github_issue_deleted")),
    Row("github fault", "422 label already exists (race)", "label applied after 2 request(s)",
        _label_write("github_label_create_422_race")),
    Row("github fault", "502 on a GET", "read (None) after 2 request(s)",
        _find_comment("github_comments_get_502_then_ok")),
    Row("github fault", "502 on the label POST", "label applied after 3 request(s)",
        _label_write("github_add_labels_502_then_ok")),
    Row("github fault", "502 on the comment POST (never re-sent)",
        "GitHubUnavailable (exit 4) after 1 request(s)", _post_comment("github_comment_post_502")),
    Row("crash", "process dies after labelling, before the store write; next run",
        "labels=['ready-for-dev'] rows=1", _crash_before_store),
    Row("crash", "comment POST fails after the rows are stored; next run",
        "rows after fault=1; after next run: comments=1 rows=1 weeks=1", _post_fails_after_store),
    Row("crash", "author comment POST fails after the label is applied; next run",
        "rows after fault=0; after next run: labels=['needs-refinement'] comments=1 rows=1",
        _author_comment_fails_after_labels),
    Row("idempotency", "issues.opened replayed 3 times",
        "labels=['ready-for-dev'] writes=2 model calls=1 rows=1", _replay_issue),
    Row("idempotency", "pull_request.opened replayed 3 times",
        "comments=1 writes=1 model calls=1 rows=1", _replay_pr),
]  # fmt: skip


def _with_cassette(name: str, fn: Callable[[], str]) -> str:
    with cassette(name):
        return fn()
