"""The author comment earned by the repository's live record.

Through the runner with the stateful fake GitHub, on both stores: the live record's
needs-refinement precision for the model, prompt and policy in use decides once it holds 30
settled decisions (54 of 60 posts, 36 of 60 withholds, whatever the calibration says); with
fewer, the policy's calibrated figure decides as before. Another prompt's or policy's record
does not count; the same weights under another name do; an unreadable record withholds.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot import factory, runner
from bot.config import VALIDATOR_OPTIONS, Settings
from bot.errors import StoreError
from bot.gate.earned import LIVE_MIN_SETTLED, LiveRecords, comment_bound, read_live_records
from bot.gate.plan import plan_gate
from bot.gate.validator import Validator, system_prompt
from bot.history.protocol import HistoryStore
from bot.history.record import GateOutcome, GateOutcomeRow, put_gate_outcome
from bot.policy_file import policy_from_text
from bot.run_report import RunReport
from bot.shares import Share
from tests.support import FakeChatModel, guards_policy, load_webhook, policy_file, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import NEEDS_REPLY

REPO = "Codertocat/Hello-World"
SHORT_BODY = "The app crashes when I click save."
"""Seven words: the ``short`` guard rules NEEDS_REFINEMENT whatever the model quotes."""


MINE = " for this model, prompt and policy"
CALIBRATED = (
    "the policy's calibrated figure (the live record holds 20 of the 30 settled "
    "needs-refinement decisions it decides from)"
)


def _seed(
    target: str,
    agree: int,
    settled: int,
    *,
    policy_version: str,
    model: str = "fake-model",
    prompt_version: str | None = None,
    verdict: str = "NEEDS_REFINEMENT",
    unsettled: int = 0,
) -> None:
    """``settled`` settled decisions of ``verdict`` in the record, ``agree`` of them agreed with,
    written as the settling writes them (one row per issue)."""
    store = factory.make_store(Settings(db_path=target))
    try:
        for i in range(settled + unsettled):
            if i >= settled:
                outcome = GateOutcome.UNSETTLED
            else:
                outcome = GateOutcome.AGREE if i < agree else GateOutcome.DISAGREE
            put_gate_outcome(
                store,
                GateOutcomeRow(
                    repo=REPO,
                    issue=1000 + i,
                    decision_id=i + 1,
                    model=model,
                    prompt_version=prompt_version or system_prompt()[1],
                    policy_version=policy_version,
                    verdict=verdict,
                    outcome=outcome,
                    expected=None if outcome is GateOutcome.UNSETTLED else verdict,
                    reason="open" if outcome is GateOutcome.UNSETTLED else "closed as fixed",
                ),
            )
    finally:
        store.close()


def _policy(tmp_path: Path, precision: float) -> tuple[Path, str]:
    path = Path(policy_file(tmp_path, "fake-model", precision=precision))
    return path, policy_from_text(path.read_text("utf-8"), source="test").version


def _run(tmp_path: Path, target: str, policy: Path) -> RunReport:
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = SHORT_BODY
    payload["issue"]["labels"] = []
    settings = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=target,
        author_comment=True,
        gate_policy=policy,
    )
    return runner.run_event(replace(settings))


def _posted(github: FakeGitHub) -> bool:
    return any(w[0] == "create_comment" for w in github.writes)


@pytest.mark.parametrize(
    ("agree", "settled", "calibrated", "posted", "decided"),
    [
        # the live record decides from 30 settled, whatever the calibration says
        (54, 60, 0.5, True, f"the live record (90% (54 of 60; 95% CI 80–95%){MINE})"),
        (36, 60, 0.9, False, f"the live record (60% (36 of 60; 95% CI 47–71%){MINE})"),
        # with fewer, the policy's calibrated figure decides, as before the record
        (20, 20, 0.5, False, CALIBRATED),
        (2, 20, 0.9, True, CALIBRATED),
    ],
)
def test_the_live_record_earns_the_author_comment_once_it_holds_30(
    tmp_path: Path,
    store_target: str,
    github: FakeGitHub,
    model: FakeChatModel,
    agree: int,
    settled: int,
    calibrated: float,
    posted: bool,
    decided: str,
) -> None:
    policy, version = _policy(tmp_path, calibrated)
    _seed(store_target, agree, settled, policy_version=version)
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, store_target, policy)
    assert report.outputs["verdict"] == "NEEDS_REFINEMENT"
    assert _posted(github) is posted
    assert f"record:   {decided}" in report.text
    shown = render(report.summary)
    assert f"<strong>Decided by:</strong> {decided}" in shown.html.replace("&quot;", '"')
    assert not shown.mentions
    if not posted:
        assert "comment:  not posted: " in report.text
        assert "**Author comment:** not posted: " in report.summary
    if not posted and settled >= LIVE_MIN_SETTLED:
        assert "the live record's needs-refinement precision" in report.text
        assert "is below 80%" in report.text


@pytest.mark.parametrize(
    "other",
    [
        {"prompt_version": "validator@00000000"},
        {"policy_version": "policy@00000000"},
        {"model": "another-model"},
        {"verdict": "VALID"},
    ],
)
def test_another_prompts_policys_or_models_record_does_not_count(
    tmp_path: Path,
    store_target: str,
    github: FakeGitHub,
    model: FakeChatModel,
    other: dict[str, Any],
) -> None:
    policy, version = _policy(tmp_path, 0.9)
    _seed(store_target, 6, 60, **{"policy_version": version, **other})
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, store_target, policy)
    assert _posted(github)
    assert "the live record holds 0 of the 30 settled" in report.text


def _decision(precision: float = 0.9, name: str = "fake-model") -> Any:
    fake = FakeChatModel(name=name)
    fake.enqueue(NEEDS_REPLY)
    policy = guards_policy(name, precision=precision)
    validator = Validator(fake, VALIDATOR_OPTIONS, max_body_chars=6000, policy=policy)
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = SHORT_BODY
    event = runner.route_event("issues", payload)
    return plan_gate(event, validator, owner=lambda n, s: "bot").decision  # type: ignore[arg-type]


def test_the_same_weights_under_another_name_share_a_record(tmp_path: Path) -> None:
    target = str(tmp_path / "triage.db")
    decision = _decision(name="served:tag")
    version = decision.policy.policy.version
    _seed(target, 36, 60, policy_version=version, model="base.gguf")
    store = factory.make_store(Settings(db_path=target), read_only=True)
    try:
        alone = read_live_records(store, REPO)
        aliased = read_live_records(store, REPO, {"served:tag": "base.gguf"})
    finally:
        store.close()
    assert comment_bound(decision, 0.8, alone).withheld is None
    shared = comment_bound(decision, 0.8, aliased)
    assert shared.withheld is not None
    assert "36 of 60" in shared.withheld


class _Unreadable:
    """A store whose reads fail, as a dropped connection does."""

    def fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        raise StoreError("cannot read the store: connection lost")


def test_an_unreadable_record_withholds_the_comment_and_says_so() -> None:
    live = read_live_records(_Unreadable(), REPO)  # type: ignore[arg-type]
    assert live.error is not None
    bound = comment_bound(_decision(), 0.8, live)
    assert bound.withheld is not None
    assert "the live record could not be read" in bound.withheld
    assert "connection lost" in bound.withheld


def test_a_bound_of_zero_reads_no_record_and_posts(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(store: HistoryStore, repo: str, aliases: Any = None) -> LiveRecords:
        raise AssertionError("the record is read only when the bound applies")

    monkeypatch.setattr("bot.gate.pipeline.read_live_records", refuse)
    policy, _ = _policy(tmp_path, 0.1)
    model.enqueue(NEEDS_REPLY)
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = SHORT_BODY
    settings = Settings(
        github_token="t",
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
        author_comment=True,
        gate_policy=policy,
        comment_min_precision=0.0,
    )
    runner.run_event(settings)
    assert _posted(github)


def test_no_live_record_given_keeps_the_calibrated_rule() -> None:
    """Outside a run (the eval, a plan made without a store) the calibrated figure decides."""
    assert comment_bound(_decision(0.9), 0.8).withheld is None
    assert comment_bound(_decision(0.5), 0.8).withheld is not None
    share = LiveRecords({}).share_for(_decision())
    assert share == Share(0, 0)


def test_a_backlog_reads_the_record_once_and_withholds_by_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four short issues, one read of the live record, which (36 of 60) withholds all four
    author comments although the policy's calibrated figure (90%) would post them."""
    import bot.gate.pipeline as pipeline

    target = str(tmp_path / "triage.db")
    policy, version = _policy(tmp_path, 0.9)
    _seed(target, 36, 60, policy_version=version)
    reads: list[str] = []

    def counted(store: HistoryStore, repo: str, aliases: Any = None) -> LiveRecords:
        reads.append(repo)
        return read_live_records(store, repo, aliases)

    monkeypatch.setattr(pipeline, "read_live_records", counted)
    github.open_issue_list = [
        {"number": n, "title": "Crash", "body": SHORT_BODY, "state": "open", "labels": []}
        for n in (1, 2, 3, 4)
    ]
    model.enqueue(*[NEEDS_REPLY] * 4)
    settings = Settings(github_token="t", db_path=target, author_comment=True, gate_policy=policy)
    runner.run_backlog(settings, REPO)
    assert reads == [REPO]
    assert {n: github.issue_labels[n] for n in (1, 2, 3, 4)} == {
        n: ["needs-refinement"] for n in (1, 2, 3, 4)
    }
    assert not _posted(github)
