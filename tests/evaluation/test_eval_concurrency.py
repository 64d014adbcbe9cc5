"""``triage-bot eval`` with ``--model-concurrency``: the gate sends up to N calls at once to a
server backend (a fake OpenAI-compatible server on loopback, real HTTP), the report and the
saved replies are those of a one-at-a-time run, item for item and in the set's order, and an
item whose call fails is that item's ``ERROR`` alone; the audit's segments likewise. The
embedded backend stays at one call at a time."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.audit.auditor import Auditor
from bot.audit.contract import render_sections
from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.cli import main
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS, Settings
from bot.errors import ModelUnavailable
from bot.evaluation.run import RecordingModel, eval_audit
from bot.evaluation.sets import EvalIssue, EvalSegment, load_jsonl
from bot.factory import model_concurrency
from bot.gate.issue_text import delimit_issue, prepare_issue
from tests.support import ROOT
from tests.support.fake_openai import Answer, Received, completion, fake_openai_server
from tests.support.replies import reply

SET = ROOT / "evals" / "issues.jsonl"
ISSUES = load_jsonl(SET, EvalIssue)
SEGMENTS = load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)


def _mark(text: str) -> int:
    return zlib.crc32(text.encode())


def _delimited(item: EvalIssue) -> str:
    """The user message the validator sends for ``item``, less its first line (the
    ``<issue id=…>`` tag, whose id is random per call)."""
    issue = prepare_issue(item.title, item.body, max_body_chars=6000)
    return delimit_issue(issue).split("\n", 1)[1]


def _fails(mark: int) -> bool:
    """About one item in ten: the server refuses it."""
    return mark % 10 == 3


def _answer(request: Received) -> Answer:
    """A reply that depends on the issue it answers (its delimited text): the verdict by the
    mark's parity, the mark in the reason; a 400 for about one item in ten."""
    mark = _mark(request.body["messages"][-1]["content"].split("\n", 1)[1])
    if _fails(mark):
        return Answer(400, {"error": {"message": "cannot take this one", "type": "bad_request"}})
    verdict = "VALID" if mark % 2 else "NEEDS_REFINEMENT"
    return completion(reply(verdict, f"Judged as case {mark}."))


def _eval(url: str, tmp_path: Path, concurrency: int) -> tuple[dict[str, Any], list[Any]]:
    out = tmp_path / f"report-{concurrency}.json"
    saved = tmp_path / f"replies-{concurrency}.jsonl"
    result = CliRunner().invoke(
        main,
        ["eval", "--only", "gate", "--issues", str(SET), "--out", str(out),
         "--save-replies", str(saved), "--openai-base-url", url, "--model", "fake",
         "--model-concurrency", str(concurrency)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text("utf-8"))["gate"]
    replies = [json.loads(line) for line in saved.read_text("utf-8").splitlines()]
    return report, replies


_TIMING = ("model_ms", "wall_ms", "latency", "p50", "p95")


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if not k.startswith(_TIMING)}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def test_four_at_once_gives_the_one_at_a_time_report_item_for_item(tmp_path: Path) -> None:
    with fake_openai_server(_answer, delay_s=0.05) as server:
        one, one_replies = _eval(server.url, tmp_path, 1)
        assert server.most_in_flight == 1
        server.most_in_flight = 0
        four, four_replies = _eval(server.url, tmp_path, 4)
        assert server.most_in_flight == 4
    ids = [item.id for item in ISSUES]
    assert [o["id"] for o in four["outcomes"]] == ids  # the set's order
    assert _without_timing(four) == _without_timing(one)
    assert four_replies == one_replies
    # each item was asked once a run, and its outcome is its own answer, not a neighbour's
    asked = [_mark(r.body["messages"][-1]["content"].split("\n", 1)[1]) for r in server.received]
    marks = [_mark(_delimited(item)) for item in ISSUES]
    assert sorted(asked) == sorted(marks * 2)
    by_id = {r["id"]: r for r in four_replies}
    failing = 0
    for item, outcome, mark in zip(ISSUES, four["outcomes"], marks, strict=True):
        if _fails(mark):
            failing += 1
            assert outcome["got"] == "ERROR"
            assert outcome["error_kind"] == "model_request_rejected"
            assert by_id[item.id]["reply"] is None
            assert by_id[item.id]["error"] == "model_request_rejected"
        else:
            assert outcome["model_verdict"] == ("VALID" if mark % 2 else "NEEDS_REFINEMENT")
            assert f"case {mark}." in by_id[item.id]["reply"]
    assert 0 < failing < len(ISSUES) / 4  # the fault rate the test means: about one in ten


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, 1),
        ({"OLLAMA_HOST": "http://127.0.0.1:11434"}, 8),
        ({"TRIAGE_OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, 8),
    ],
    ids=["embedded", "ollama", "openai"],
)
def test_the_embedded_backend_takes_one_call_at_a_time(env: dict[str, str], expected: int) -> None:
    settings = Settings.resolve({"model_concurrency": 8}, env)
    assert model_concurrency(settings) == expected


@pytest.mark.parametrize("value", ["0", "65", "many"])
def test_a_concurrency_out_of_range_is_a_configuration_error(value: str) -> None:
    result = CliRunner().invoke(main, ["eval", "--only", "gate", "--model-concurrency", value])
    assert result.exit_code == 2


class _TwoAtOnce:
    """A model whose calls wait for each other: both replies exist before either is taken. A
    user message ``fail`` raises a model fault."""

    name = "m"

    def __init__(self) -> None:
        self.together = threading.Barrier(2, timeout=5)

    def chat(
        self, messages: Sequence[ChatMessage], *, options: RoleOptions, schema: Any = None
    ) -> ChatResult:
        self.together.wait()
        if messages[-1].content == "fail":
            raise ModelUnavailable("down")
        return ChatResult(messages[-1].content, "stop", "m", 1, 1, 1.0)


def test_the_recorder_keeps_each_threads_replies_and_fault_apart() -> None:
    model = _TwoAtOnce()
    recorder = RecordingModel(model)
    taken: dict[str, tuple[list[str], str | None]] = {}
    both_called = threading.Barrier(2, timeout=5)

    def judge(word: str) -> None:
        with contextlib.suppress(ModelUnavailable):
            recorder.chat([ChatMessage("user", word)], options=VALIDATOR_OPTIONS)
        both_called.wait()
        taken[word] = (recorder.take(), recorder.last_fault)

    threads = [threading.Thread(target=judge, args=(w,)) for w in ("first", "fail")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert taken == {"first": (["first"], None), "fail": ([], "model_unavailable")}


class _Audits:
    """A model for the auditor that answers each segment with a GO naming it (its path and
    lines), refuses about one segment in ten, and counts the calls in flight; the first
    ``width`` calls wait for each other, so that many are provably in flight together."""

    name = "m"

    def __init__(self, width: int) -> None:
        self.first = threading.Barrier(width, timeout=10)
        self.lock = threading.Lock()
        self.calls = self.now = self.most = 0

    def chat(
        self, messages: Sequence[ChatMessage], *, options: RoleOptions, schema: Any = None
    ) -> ChatResult:
        where = re.search(r'path="([^"]+)" lines="([^"]+)"', messages[1].content)
        assert where is not None
        segment = f"{where.group(1)}:{where.group(2)}"
        with self.lock:
            self.calls += 1
            self.now += 1
            self.most = max(self.most, self.now)
            early = self.calls <= self.first.parties
        try:
            if early:
                self.first.wait()
            if _fails(_mark(segment)):
                raise ModelUnavailable("the server answered 503")
            return ChatResult(_go(f"{segment} reviewed."), "stop", "m", 50, 9, 3.0)
        finally:
            with self.lock:
                self.now -= 1


def _go(bottom_line: str) -> str:
    none = dict.fromkeys(
        ("verified_defects", "non_blocking_risks", "assumptions", "future_improvements"), "None"
    )
    return render_sections(
        {**none, "bottom_line": bottom_line, "verdict": "GO", "confidence": "High"}
    )


def _audit_eval(width: int) -> tuple[dict[str, Any], _Audits, list[int]]:
    model = _Audits(width)
    recorder = RecordingModel(model)
    ticks: list[int] = []
    report = eval_audit(
        Auditor(recorder, AUDITOR_OPTIONS),
        SEGMENTS,
        lambda: ticks.append(threading.get_ident()),
        recorder,
        concurrency=width,
    )
    return report, model, ticks


def test_the_audit_eval_audits_n_segments_at_once_in_the_sets_order() -> None:
    one, one_model, _ = _audit_eval(1)
    four, model, ticks = _audit_eval(4)
    assert (one_model.most, model.most) == (1, 4)
    assert four == one  # the fake's times are fixed: the whole report, item for item
    assert [o["id"] for o in four["outcomes"]] == [s.id for s in SEGMENTS]
    assert ticks == [threading.get_ident()] * len(SEGMENTS)  # progress on the caller's thread
    cut = 0
    for item, outcome in zip(SEGMENTS, four["outcomes"], strict=True):
        segment = f"{item.path}:{item.start}-{item.end}"
        if _fails(_mark(segment)):
            cut += 1
            assert (outcome["status"], outcome["error_kind"]) == ("rejected", "model_unavailable")
            assert outcome["replies"] == []
        else:
            assert outcome["replies"], item.id
            assert all(f"{segment} reviewed." in r for r in outcome["replies"]), item.id
    assert 0 < cut < len(SEGMENTS) / 4
