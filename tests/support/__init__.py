"""Helpers the tests, the reliability rows and the benchmarks share (``conftest.py`` keeps only
pytest's fixtures and hooks): paths, a scriptable fake model, payloads, cassettes, a store row,
a recording GitHub port and a ready-made gate plan."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vcr

from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.errors import ModelError
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import LABEL_FOR_VERDICT, LabelPlan
from bot.gate.plan import GatePlan
from bot.gate.policy import shipped_policies
from bot.gate.types import GateDecision
from bot.gate.validator import system_prompt
from bot.history.store import AuditRow
from bot.policy_file import GatePolicy, HalfFigures, Measurement

__all__ = [
    "CASSETTES",
    "DATA",
    "GUARDS",
    "ROOT",
    "TIMINGS",
    "FakeChatModel",
    "RecordingGitHub",
    "audit_row",
    "cassette",
    "guards_policy",
    "load_webhook",
    "make_plan",
    "migrate_first",
    "policy_file",
    "user_docs",
    "write_payload",
]

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"
CASSETTES = ROOT / "cassettes"


def user_docs() -> str:
    """README.md and every page under docs/, joined: what a user reads. A test that checks a
    thing is documented reads this when the thing lives in docs/ rather than the README."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(page.read_text("utf-8") for page in pages)


GUARDS = next(p for p in shipped_policies() if p.verdict_from == "guards")
"""The shipped policy that does not count the model's verdict (the embedded default's): VALID
unless a guard (unfilled template, too short, no verified quote) rules NEEDS_REFINEMENT."""


def guards_policy(
    model: str = "fake-model", *, precision: float = 0.9, prompt_version: str | None = None
) -> GatePolicy:
    """:data:`GUARDS` as if measured for ``model`` (the fake model by default) and the bot's
    own checklist's prompt (or ``prompt_version``), with this needs-refinement precision on
    both halves: a policy whose figures hold for a run of that model, so the author comment is
    posted when ``precision`` reaches the bound."""
    figures = HalfFigures(items=20, agreement=0.9, nr_precision=precision)
    return GUARDS.model_copy(
        update={
            "name": "test-guards",
            "measured": Measurement(
                model=model,
                prompt_version=prompt_version or system_prompt()[1],
                labelled_set="written for the tests",
                tune=figures,
                check=figures,
            ),
        }
    )


def policy_file(folder: Path, model: str, *, precision: float = 0.9) -> str:
    """Write :func:`guards_policy` for ``model`` into ``folder``; its path, for
    ``TRIAGE_GATE_POLICY`` (a run of that model then posts the author comment)."""
    path = folder / f"policy-{len(list(folder.glob('policy-*.json')))}.json"
    path.write_text(guards_policy(model, precision=precision).model_dump_json(), "utf-8")
    return str(path)


TIMINGS: list[tuple[str, float]] = []
"""(what, ms) of real-model runs, printed at the end of the test session (conftest.py)."""

FIXED_NONCE = "5e3a91c0d7b24f68"
"""The tag id real-model tests delimit untrusted text with (tests/conftest.py)."""


@dataclass
class FakeChatModel:
    """A :class:`ChatModel` that replays queued replies and records every call.

    A queued text comes back with fixed figures (100 prompt, 20 output tokens, 5 ms); a queued
    :class:`ChatResult` comes back as it is (known token counts and times); a queued error is
    raised."""

    name: str = "fake-model"
    queue: list[str | ChatResult | ModelError] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def enqueue(self, *replies: str | ChatResult | ModelError) -> FakeChatModel:
        self.queue.extend(replies)
        return self

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        self.history.append({"messages": list(messages), "options": options, "schema": schema})
        if not self.queue:
            raise AssertionError("FakeChatModel called more often than replies were queued")
        reply = self.queue.pop(0)
        if isinstance(reply, ModelError):
            raise reply
        if isinstance(reply, ChatResult):
            return reply
        return ChatResult(
            text=reply,
            done_reason="stop",
            model=self.name,
            prompt_tokens=100,
            output_tokens=20,
            duration_ms=5.0,
        )


def load_webhook(name: str) -> dict[str, Any]:
    """A copy of a real webhook payload from tests/data/webhooks/ (see its README)."""
    data: dict[str, Any] = json.loads((DATA / "webhooks" / f"{name}.json").read_text("utf-8"))
    return copy.deepcopy(data)


def write_payload(tmp_path: Path, payload: dict[str, Any], name: str = "event.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def cassette(name: str, captured: list[Any] | None = None, *, repeat: bool = False) -> Any:
    """Replay-only vcrpy context for ``cassettes/<name>.yaml`` (no network, auth filtered).

    ``repeat`` lets one recorded answer serve every request that matches it (a model that
    answers the repair turn the same way as the first).

    ``captured``, when given, receives the live requests the code under test sends, in order,
    so tests can assert on what goes over the wire. vcrpy may present one live request to the
    matcher more than once, so consecutive duplicates are collapsed: count requests with the
    cassette's ``play_count``, not with ``captured``.
    """

    def live(r1: Any, _r2: Any) -> None:
        if captured is None:
            return
        key = (r1.method, r1.uri, r1.body)
        if not captured or (captured[-1].method, captured[-1].uri, captured[-1].body) != key:
            captured.append(r1)

    recorder = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path", "query", "live"],
        filter_headers=["authorization"],
        decode_compressed_response=True,
    )
    recorder.register_matcher("live", live)
    return recorder.use_cassette(f"{name}.yaml", allow_playback_repeats=repeat)


def audit_row(**overrides: object) -> AuditRow:
    """An accepted audit of ``o/r`` PR 7 (``GO_WITH_NOTES``, ``Medium``, retried), with
    ``overrides`` for any column."""
    values: dict[str, object] = {
        "repo": "o/r",
        "pr": 7,
        "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        "path": "src/app.py",
        "line_start": 10,
        "line_end": 40,
        "verdict": "GO_WITH_NOTES",
        "confidence": "Medium",
        "retried": True,
        "audit_format": "markdown",
        "model": "m",
        "prompt_version": "audit-markdown@00000000",
        "prompt_tokens": 900,
        "output_tokens": 300,
        "duration_ms": 1234.5,
        "markdown": "## 1. Bottom line\n...",
    }
    values.update(overrides)
    return AuditRow(**values)  # type: ignore[arg-type]


@dataclass
class RecordingGitHub:
    """A GitHubPort for the gate's writes that records calls instead of making them."""

    calls: list[tuple[str, ...]] = field(default_factory=list)

    def ensure_label(self, repo: str, name: str, *, color: str, description: str) -> None:
        self.calls.append(("ensure", repo, name))

    def add_labels(self, repo: str, number: int, names: Sequence[str]) -> None:
        self.calls.append(("add", repo, str(number), *names))

    def remove_label(self, repo: str, number: int, name: str) -> None:
        self.calls.append(("remove", repo, str(number), name))


def make_plan(labels: LabelPlan) -> GatePlan:
    """A plan for Codertocat/Hello-World#1 with a given label plan (for adapter tests); its
    decision's verdict is the one whose label is ``labels.target`` (none: a fault)."""
    verdict = next((v for v, label in LABEL_FOR_VERDICT.items() if label == labels.target), None)
    decision = GateDecision(
        verdict=verdict,
        reason="r",
        error_kind=None if verdict else "model",
        model="m",
        prompt_version="validator@00000000",
        prompt_tokens=0,
        output_tokens=0,
        model_ms=0.0,
        wall_ms=0.0,
        issue=prepare_issue("t", "b", max_body_chars=500),
    )
    return GatePlan("issues.opened", "Codertocat/Hello-World", 1, True, decision, labels)


def migrate_first(target: str, done: int) -> None:
    """Apply the first ``done`` shipped migrations to a SQLite file or PostgreSQL URL, as an
    older release would have left it."""
    import sqlite3

    from yoyo import get_backend  # type: ignore[import-untyped]

    from bot.history import migrate

    first = migrate.migrations()[:done]
    if target.startswith("postgresql://"):
        backend = get_backend("postgresql+psycopg://" + target.split("://", 1)[1])
        try:
            with backend.lock():
                backend.apply_migrations(backend.to_apply(first))
        finally:
            backend.connection.close()
        return
    conn = sqlite3.connect(target)
    try:
        with migrate.sqlite_backend(conn) as backend:
            backend.apply_migrations(backend.to_apply(first))
    finally:
        conn.close()
