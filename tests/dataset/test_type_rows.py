"""``triage-bot dataset --types`` on the loopback GitHub of tests/support/dataset_server.py: one
closed issue per rule of :mod:`bot.dataset.type_rows` (a maintainer's type label, an issue
form's label a maintainer confirmed or nobody did, the bot's own label, two types, none, a
renamed or multi-word label, a pull request, an open issue), the counts printed, what a run
costs, resume, and a file of the other kind refused. Timeline events are written by
tests/support/dataset_world.py to GitHub's shapes (its provenance)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import ListedIssue, TimelineItem
from bot.dataset import run_dataset
from bot.dataset.files import row_id, state_path
from bot.dataset.rules import LabelRules, SkipReason
from bot.dataset.type_rows import TypeRow, decide_type, early_type_skip
from bot.errors import ConfigError
from bot.evaluation.sets import load_jsonl
from bot.repo_file import TypeLabels, parse_repo_file
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import (
    FULL_BODY,
    MAINTAINER,
    REPO,
    REPORTER,
    SHORT_BODY,
    T0,
    TRIAGER,
    Scenario,
    closed,
    commented,
    edit_node,
    issue_item,
    labeled,
    renamed,
    unlabeled,
)

TOKEN = "test-token-not-real"

REPO_FILE = """types:
  labels:
    bug: ['Kind: Defect', bug]
    question: ['Questions and Help', question]
dataset:
  triager_bots: ['triage-helper[bot]']
"""
"""Bug and question renamed (a multi-word name among them), feature on the common names."""

H = timedelta(hours=1)
D = timedelta(days=1)


def _issue(n: int, t: datetime, *labels: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("body", SHORT_BODY)
    return issue_item(n, title=f"Export fails ({n})", created=t, labels=labels, **fields)


Outcome = str | SkipReason
"""A type, or why no row."""

Case = Callable[[int, datetime], tuple[Scenario, Outcome]]


def _case(
    n: int, item: dict[str, Any], timeline: list[dict[str, Any]] | None, **kw: Any
) -> Scenario:
    return Scenario(rule="", number=n, item=item, timeline=timeline, **kw)


def form_label_then_another_label(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t, "Kind: Defect", REPORTER), labeled(t + H, "confirmed"), closed(t + D)]
    return _case(n, _issue(n, t, "Kind: Defect", "confirmed"), timeline), "bug"


def form_label_then_closed_as_completed(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t, "bug", REPORTER), closed(t + D, "completed")]
    return _case(n, _issue(n, t, "bug"), timeline), "bug"


def form_label_nobody_confirmed(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    """A maintainer answered, and the reporter closed it: nobody said what it is."""
    timeline = [
        labeled(t, "Questions and Help", REPORTER),
        commented(t + H, "Try the --verbose flag."),
        closed(t + D, actor=REPORTER),
    ]
    return _case(n, _issue(n, t, "Questions and Help"), timeline), SkipReason.TYPE_UNCONFIRMED


def form_label_closed_not_planned(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t, "bug", REPORTER), closed(t + D, "not_planned")]
    item = _issue(n, t, "bug", state_reason="not_planned")
    return _case(n, item, timeline), SkipReason.TYPE_UNCONFIRMED


def maintainer_label_multi_word_other_case(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t + H, "type: feature request"), closed(t + D)]
    return _case(n, _issue(n, t, "type: feature request"), timeline), "feature"


def two_types(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t + H, "bug"), labeled(t + H, "enhancement"), closed(t + D)]
    return _case(n, _issue(n, t, "bug", "enhancement"), timeline), SkipReason.SEVERAL_TYPES


def no_type(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t + H, "documentation"), closed(t + D)]
    return _case(n, _issue(n, t, "documentation"), timeline), SkipReason.NO_TYPE


def a_common_name_the_file_renamed(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    """``type: bug`` is a common name of bug, which the file gives its own names."""
    timeline = [labeled(t + H, "type: bug"), closed(t + D)]
    return _case(n, _issue(n, t, "type: bug"), timeline), SkipReason.NO_TYPE


def the_bots_own_label(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    """The bot labelled it, and a maintainer triaged after: still the bot's label."""
    timeline = [
        labeled(t + timedelta(minutes=1), "bug", "github-actions[bot]", "Bot"),
        labeled(t + H, "confirmed"),
        closed(t + D),
    ]
    return _case(n, _issue(n, t, "bug", "confirmed"), timeline), SkipReason.TYPE_BY_BOT


def relabelled_by_a_maintainer(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [
        labeled(t, "bug", REPORTER),
        unlabeled(t + H, "bug"),
        labeled(t + H, "question"),
        closed(t + D),
    ]
    return _case(n, _issue(n, t, "question"), timeline), "question"


def opened_and_labelled_by_a_maintainer(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t, "bug", MAINTAINER), closed(t + D, actor=MAINTAINER)]
    item = _issue(n, t, "bug", author=MAINTAINER, association="MEMBER")
    return _case(n, item, timeline), "bug"


def an_apps_label_nobody_confirmed(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [
        labeled(t + timedelta(minutes=1), "enhancement", "issue-labeler[bot]", "Bot"),
        closed(t + D, actor=REPORTER),
    ]
    return _case(n, _issue(n, t, "enhancement"), timeline), SkipReason.TYPE_UNCONFIRMED


def a_listed_triager_bots_label(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [labeled(t + timedelta(minutes=1), "enhancement", TRIAGER, "Bot"), closed(t + D)]
    return _case(n, _issue(n, t, "enhancement"), timeline), "feature"


def a_gate_label_confirms_nothing(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    timeline = [
        labeled(t, "bug", REPORTER),
        labeled(t + H, "ready-for-dev"),
        closed(t + D, actor=REPORTER),
    ]
    item = _issue(n, t, "bug", "ready-for-dev")
    return _case(n, item, timeline), SkipReason.TYPE_UNCONFIRMED


def a_label_the_timeline_does_not_show(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    return _case(n, _issue(n, t, "bug"), [closed(t + D)]), SkipReason.TYPE_UNCONFIRMED


def edited_and_renamed_after_opening(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    """The row keeps the text the issue was opened with."""
    timeline = [
        labeled(t + H, "bug"),
        renamed(t + 2 * H, "export broken", f"Export fails ({n})"),
        closed(t + D),
    ]
    edits = edit_node(n, [(t, SHORT_BODY, REPORTER), (t + 2 * H, FULL_BODY, REPORTER)])
    item = _issue(n, t, "bug", body=FULL_BODY)
    return _case(n, item, timeline, edits=edits, title="export broken", body=SHORT_BODY), "bug"


def locked_as_spam(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    item = _issue(n, t, "question", locked=True, lock_reason="spam")
    return _case(n, item, [labeled(t + H, "question")]), SkipReason.LOCKED


def opened_by_a_bot(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    item = _issue(n, t, "bug", author="dependabot[bot]", author_type="Bot")
    return _case(n, item, [labeled(t, "bug")]), SkipReason.BOT


def deleted_since_listed(n: int, t: datetime) -> tuple[Scenario, Outcome]:
    return _case(n, _issue(n, t, "bug"), None), SkipReason.GONE


CASES: tuple[Case, ...] = (
    form_label_then_another_label,
    form_label_then_closed_as_completed,
    form_label_nobody_confirmed,
    form_label_closed_not_planned,
    maintainer_label_multi_word_other_case,
    two_types,
    no_type,
    a_common_name_the_file_renamed,
    the_bots_own_label,
    relabelled_by_a_maintainer,
    opened_and_labelled_by_a_maintainer,
    an_apps_label_nobody_confirmed,
    a_listed_triager_bots_label,
    a_gate_label_confirms_nothing,
    a_label_the_timeline_does_not_show,
    edited_and_renamed_after_opening,
    locked_as_spam,
    opened_by_a_bot,
    deleted_since_listed,
)

EARLY = {SkipReason.NO_TYPE, SkipReason.SEVERAL_TYPES, SkipReason.LOCKED, SkipReason.BOT}
"""Reasons known from the list, before any timeline is read."""

OPEN_ISSUE = 99
"""An open issue with a maintainer's type label: the list of closed issues never holds it."""


def _world() -> tuple[list[Scenario], dict[int, Outcome]]:
    scenarios, outcomes = [], {}
    for i, case in enumerate(CASES, start=1):
        scenario, outcome = case(i, T0 + i * H)
        if not scenario.title:
            scenario.title = scenario.item["title"]
        if not scenario.body:
            scenario.body = scenario.item["body"]
        scenarios.append(scenario)
        outcomes[i] = outcome
    t = T0 + OPEN_ISSUE * H
    item = _issue(OPEN_ISSUE, t, "bug", state_reason=None)
    item["state"] = "open"
    scenarios.append(_case(OPEN_ISSUE, item, [labeled(t + H, "bug")]))
    return scenarios, outcomes


def _server(scenarios: list[Scenario]) -> LoopbackGitHub:
    github = LoopbackGitHub(scenarios, repo_file=REPO_FILE)
    for item in github.listing:  # a pull request a maintainer labelled bug is no issue
        if item.get("pull_request"):
            item["labels"] = [{"id": 1, "name": "bug", "color": "d73a4a", "default": True}]
    return github


def _client(github: LoopbackGitHub) -> PyGithubClient:
    return PyGithubClient(
        token=TOKEN, base_url=github.base_url, retries=0, backoff_s=0.0, sleep=lambda _: None
    )


def _rows(out: Path) -> dict[int, TypeRow]:
    return {int(r.id.rsplit("-", 1)[1]): r for r in load_jsonl(out, TypeRow)}


def _skipped(out: Path) -> dict[int, str]:
    state = json.loads(state_path(out).read_text("utf-8"))
    return {int(k.rsplit("-", 1)[1]): v for k, v in state["repos"][REPO]["skipped"].items()}


def _cli(github: LoopbackGitHub, out: Path, *args: str) -> Any:
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": github.base_url}
    return CliRunner().invoke(
        main, ["dataset", "--repo", REPO, "--out", str(out), "--types", *args], env=env
    )


def test_each_type_rule_end_to_end(tmp_path: Path) -> None:
    scenarios, outcomes = _world()
    out = tmp_path / "types.jsonl"
    with _server(scenarios) as github:
        result = _cli(github, out)
        requests = dict(github.requests)
        timelines = set(github.per_issue)
    assert result.exit_code == 0, result.output
    rows, skipped = _rows(out), _skipped(out)
    got: dict[int, Outcome] = {n: r.type for n, r in rows.items()}
    got |= {n: SkipReason(reason) for n, reason in skipped.items()}
    assert got == outcomes
    by_number = {s.number: s for s in scenarios}
    for number, row in rows.items():
        s = by_number[number]
        assert row.id == row_id(REPO, number)
        assert (row.title, row.body, row.repo) == (s.title, s.body, REPO)
        assert row.created_at == T0 + number * H
    # the row's shape: {id, title, body, type} and repo, created_at (the development set's)
    line = json.loads(out.read_text("utf-8").splitlines()[0])
    assert set(line) == {"id", "title", "body", "type", "repo", "created_at"}
    # the list, the repository file, one GraphQL read; a timeline only for an issue whose
    # labels name one type
    early = {n for n, o in outcomes.items() if o in EARLY}
    assert timelines == set(outcomes) - early
    assert requests == {"contents": 1, "list": 1, "graphql": 1, "timeline": len(timelines)}
    # counts per type and per reason
    counts = {
        t: sum(1 for o in outcomes.values() if o == t) for t in ("bug", "feature", "question")
    }
    assert (
        f"This run: read {len(outcomes)} closed issue(s); typed {counts['bug']} bug, "
        f"{counts['feature']} feature, {counts['question']} question; left out "
        f"{len(skipped)}." in result.output
    )
    unconfirmed = sum(1 for o in outcomes.values() if o == SkipReason.TYPE_UNCONFIRMED)
    assert f"{unconfirmed:>5}  {SkipReason.TYPE_UNCONFIRMED.value}" in result.output
    assert f"    1  {SkipReason.SEVERAL_TYPES.value}" in result.output
    assert "Next: triage-bot eval" not in result.output  # the readiness rows' next step
    (nxt,) = [line for line in result.output.splitlines() if line.startswith("Next: ")]
    assert nxt.startswith(f"Next: triage-bot types fit --issues {out} --repo {REPO} --out ")
    fit = main.commands["types"].commands["fit"]  # type: ignore[attr-defined]
    options = {o for p in fit.params for o in p.opts}
    assert {w for w in nxt.split() if w.startswith("--")} <= options


def test_a_stopped_types_run_resumes_and_an_unchanged_list_costs_one_request(
    tmp_path: Path,
) -> None:
    scenarios, outcomes = _world()
    out = tmp_path / "types.jsonl"
    types = parse_repo_file(REPO_FILE).types.labels

    def interrupt(progress: Any) -> None:
        if progress.rows >= 2:
            raise KeyboardInterrupt

    with _server(scenarios) as github:
        with pytest.raises(KeyboardInterrupt):
            run_dataset(_client(github), REPO, out, types=types, on_progress=interrupt)
        assert len(_rows(out)) == 2
        resumed = run_dataset(_client(github), REPO, out, types=types)
        unchanged = run_dataset(_client(github), REPO, out, types=types)
        read = dict(github.per_issue)
    done = set(_rows(out)) | set(_skipped(out))
    assert done == set(outcomes)
    assert len(load_jsonl(out, TypeRow)) == len(_rows(out))  # no row twice
    assert set(read.values()) == {1}  # no timeline read twice
    assert resumed.progress.earlier >= 2
    assert resumed.progress.rows == len(_rows(out))
    assert (unchanged.progress.unchanged_pages, unchanged.progress.read) == (1, 0)


def test_a_file_of_the_other_kind_is_refused_before_any_request(tmp_path: Path) -> None:
    scenarios, _ = _world()
    readiness = tmp_path / "set.jsonl"
    readiness.write_text(
        '{"id": "x-1", "kind": "bug", "title": "t", "body": "b", "expected": "VALID", '
        '"rationale": "r"}\n',
        "utf-8",
    )
    typed = tmp_path / "types.jsonl"
    state_path(typed).write_text('{"version": 1, "rows": "eval", "repos": {}}\n', "utf-8")
    with _server(scenarios) as github:
        wrong_rows = _cli(github, readiness)
        wrong_state = _cli(github, typed)
        asked = sum(github.requests.values())
    assert wrong_rows.exit_code == 2
    assert f"--out {readiness}:1: not a type row" in wrong_rows.output
    assert wrong_state.exit_code == 2
    assert "kept by a run that wrote readiness rows, and this one writes type rows" in (
        wrong_state.output
    )
    assert asked == 0
    # and a readiness run refuses a type rows file
    with pytest.raises(ConfigError, match="not a row of the eval format"):
        run_dataset(_client(github), REPO, _typed_file(tmp_path))


def _typed_file(tmp_path: Path) -> Path:
    out = tmp_path / "typed.jsonl"
    row = TypeRow(id=row_id(REPO, 1), title="t", body="b", type="bug", repo=REPO)
    out.write_text(row.model_dump_json(exclude_defaults=True) + "\n", "utf-8")
    return out


# --- the rule, item by item -----------------------------------------------------------------
RULES = LabelRules.from_config(bot_login="my-app[bot]")


def _listed(*labels: str, **fields: Any) -> ListedIssue:
    values: dict[str, Any] = {
        "number": 1, "node_id": "I_1", "title": "t", "body": "b", "author": "reporter",
        "author_type": "User", "author_association": "NONE", "labels": labels,
        "created_at": datetime(2024, 1, 1, tzinfo=UTC),
    }  # fmt: skip
    return ListedIssue(**(values | fields))


def _event(event: str, actor: str | None, label: str | None = None, **fields: Any) -> TimelineItem:
    at = datetime(2024, 1, 2, tzinfo=UTC)
    return TimelineItem(event=event, created_at=at, actor=actor, label=label, **fields)


def test_an_open_issue_and_a_pull_request_give_no_row() -> None:
    assert early_type_skip(_listed("bug", state="open"), TypeLabels()) is SkipReason.OPEN
    assert early_type_skip(_listed("bug", pull_request=True), TypeLabels()) is (
        SkipReason.PULL_REQUEST
    )
    assert early_type_skip(_listed("bug"), TypeLabels()) is None


@pytest.mark.parametrize(
    ("issue", "timeline", "outcome"),
    [
        # the reporter who maintains the repository chose it
        (
            _listed("bug", author_association="COLLABORATOR"),
            [_event("labeled", "reporter", "bug")],
            "bug",
        ),
        # the bot's login, whatever case GitHub gives it, never counts
        (
            _listed("bug"),
            [_event("labeled", "My-App[bot]", "bug", actor_type="Bot")],
            SkipReason.TYPE_BY_BOT,
        ),
        # two names of one type are one type; the last labelling decides
        (
            _listed("bug", "type: bug"),
            [_event("labeled", "maint", "bug"), _event("labeled", "reporter", "type: bug")],
            SkipReason.TYPE_UNCONFIRMED,
        ),
        # closed as a duplicate: nobody said the form's type is right
        (
            _listed("question"),
            [
                _event("labeled", "reporter", "question"),
                _event("closed", "maint", state_reason="duplicate"),
            ],
            SkipReason.TYPE_UNCONFIRMED,
        ),
        # a maintainer's triage before the form's label confirms nothing
        (
            _listed("question"),
            [_event("labeled", "maint", "p1"), _event("labeled", "reporter", "question")],
            SkipReason.TYPE_UNCONFIRMED,
        ),
        # a close before GitHub kept a reason is a close as completed
        (
            _listed("question"),
            [_event("labeled", "reporter", "question"), _event("closed", "maint")],
            "question",
        ),
        # a deleted account's label: nobody known chose it
        (_listed("bug"), [_event("labeled", None, "bug")], SkipReason.TYPE_UNCONFIRMED),
    ],
)
def test_who_labelled_and_who_confirmed(
    issue: ListedIssue, timeline: list[TimelineItem], outcome: Outcome
) -> None:
    assert decide_type(issue, timeline, TypeLabels(), RULES) == outcome
