"""Whose actions, and which questions, are a maintainer's signal to ``triage-bot dataset``,
over variants, end to end: the command against the loopback GitHub of
tests/support/dataset_server.py,
each variant's repository file served and its ``bot-login`` set as a person would
(``TRIAGE_BOT_LOGIN``). The bot's own labels and comments and the gate labels under any name
are no signal; only a person's question, or a listed triager bot's, asks; a duplicate check
asks nothing, a question that names an issue in passing still does."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.dataset.files import state_path
from bot.dataset.rules import SkipReason
from bot.evaluation.sets import EvalIssue, load_jsonl
from bot.run_report import MARKER_PREFIX
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import (
    ANSWER,
    APP_BOT,
    COMMIT,
    REPO,
    REPORTER,
    STALE,
    T0,
    Scenario,
    closed,
    commented,
    issue_item,
    labeled,
)

NUMBER = 5
OPENED = T0


def _scenario(timeline: list[dict[str, Any]], state_reason: str = "completed") -> Scenario:
    item = issue_item(
        NUMBER, title="Export fails", body="export is broken", created=OPENED,
        state_reason=state_reason,
    )  # fmt: skip
    return Scenario("variant", NUMBER, item, timeline)


def _outcome(tmp_path: Path, scenario: Scenario, repo_file: str | None, login: str | None) -> Any:
    """The row's (expected, borderline), or the skip reason's name."""
    out = tmp_path / "set.jsonl"
    with LoopbackGitHub([scenario], pulls_every=0, repo_file=repo_file) as github:
        env = {"GITHUB_TOKEN": "test-token-not-real", "GITHUB_API_URL": github.base_url}
        if login is not None:
            env["TRIAGE_BOT_LOGIN"] = login
        args = ["dataset", "--repo", REPO, "--out", str(out)]
        result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    if out.exists():
        (row,) = load_jsonl(out, EvalIssue)
        return row.expected, row.borderline
    (reason,) = json.loads(state_path(out).read_text("utf-8"))["repos"][REPO]["skipped"].values()
    return SkipReason(reason).name


def _at(**delta: float) -> Any:
    return OPENED + timedelta(**delta)


# --- the gate labels, under the repository's names ---------------------------------------


@pytest.mark.parametrize("actor", [(APP_BOT, "Bot"), ("octocat", "User")], ids=["bot", "person"])
@pytest.mark.parametrize(
    "name", ["status: needs info", "Needs Info", "waiting-for-author", "needs-repro", "Incomplete"]
)
def test_a_renamed_needs_refinement_label_asks_nothing(
    tmp_path: Path, name: str, actor: tuple[str, str]
) -> None:
    """Each name reads like a needs-info label; as the gate's, nobody asked for anything."""
    timeline = [
        labeled(_at(minutes=1), name, actor=actor[0], kind=actor[1]),
        commented(_at(hours=3), ANSWER, REPORTER, "NONE"),
        closed(_at(days=2), commit=COMMIT),
    ]
    repo_file = f"labels: {{needs_refinement: {{name: {json.dumps(name)}}}}}\n"
    assert _outcome(tmp_path, _scenario(timeline), repo_file, None) == ("VALID", False)


@pytest.mark.parametrize("name", ["confirmed", "Status: Accepted", "reproduced"])
def test_a_renamed_ready_label_accepts_nothing(tmp_path: Path, name: str) -> None:
    timeline = [
        labeled(_at(minutes=1), name, actor=APP_BOT, kind="Bot"),
        closed(_at(days=1)),
    ]
    repo_file = f"labels: {{ready: {{name: {json.dumps(name)}}}}}\n"
    assert _outcome(tmp_path, _scenario(timeline), repo_file, None) == "NO_DECISION"


def test_the_bots_default_names_stay_gate_labels_after_a_rename(tmp_path: Path) -> None:
    """Issues the bot labelled before the repository renamed its labels keep the old name."""
    timeline = [labeled(_at(minutes=1), "ready-for-dev", "octocat"), closed(_at(days=1))]
    repo_file = "labels: {ready: {name: 'status: ready'}}\ndataset: {accepted_labels: [ready]}\n"
    assert _outcome(tmp_path, _scenario(timeline), repo_file, None) == "NO_DECISION"


# --- the bot's own login, configured or the default ---------------------------------------

ACTORS = [
    ("github-actions[bot]", "Bot"),
    (APP_BOT, "Bot"),
    ("octo-triager", "User"),  # the bot run with a person's token
]


@pytest.mark.parametrize("actor", ACTORS, ids=lambda a: a[0])
@pytest.mark.parametrize(
    "login", [None, "github-actions[bot]", "My-Triage-App[bot]", "Octo-Triager"]
)
def test_only_the_bots_own_login_is_the_bot(
    tmp_path: Path, login: str | None, actor: tuple[str, str]
) -> None:
    """A needs-info label, then a fix: the bot's own label is no request; anyone else's is."""
    timeline = [
        labeled(_at(hours=1), "needs-info", actor=actor[0], kind=actor[1]),
        closed(_at(days=2), commit=COMMIT),
    ]
    own = actor[0].lower() == (login or "github-actions[bot]").lower()
    expected = ("VALID", False) if own else ("NEEDS_REFINEMENT", True)
    assert _outcome(tmp_path, _scenario(timeline), None, login) == expected


@pytest.mark.parametrize(
    ("comment", "login", "asks"),
    [
        ("by the login", None, True),  # another member's question
        ("by the login", "octo-triager", False),  # the bot, run with a person's token
        ("marked", None, False),
        ("marked", "octo-triager", False),
    ],
)
def test_the_bots_comments_ask_nothing(
    tmp_path: Path, comment: str, login: str | None, asks: bool
) -> None:
    """A question by the bot's login, or any comment with its hidden marker, asks nothing;
    the same question by another member does."""
    words = "Which version do you run?"
    if comment == "marked":
        words = f"{MARKER_PREFIX}:author -->\n{words}"
    timeline = [
        commented(_at(hours=1), words, "octo-triager"),
        commented(_at(hours=2), ANSWER, REPORTER, "NONE"),
        closed(_at(days=2), commit=COMMIT),
    ]
    expected = ("NEEDS_REFINEMENT", False) if asks else ("VALID", False)
    assert _outcome(tmp_path, _scenario(timeline), None, login) == expected


# --- bots' questions: only those the file lists --------------------------------------------


@pytest.mark.parametrize(
    ("listed", "asks"),
    [
        ([], False),
        (["stale[bot]"], True),
        (["Stale[bot]", "other[bot]"], True),
        (["other[bot]"], False),
    ],
)
def test_a_bots_question_asks_only_when_the_file_lists_it(
    tmp_path: Path, listed: list[str], asks: bool
) -> None:
    timeline = [
        commented(_at(days=30), "Is this still a problem?", STALE, "NONE", "Bot"),
        commented(_at(days=31), "Yes, still on 4.2.", REPORTER, "NONE"),
        closed(_at(days=40), commit=COMMIT),
    ]
    repo_file = f"dataset: {{triager_bots: {json.dumps(listed)}}}\n"
    expected = ("NEEDS_REFINEMENT", False) if asks else ("VALID", False)
    assert _outcome(tmp_path, _scenario(timeline), repo_file, None) == expected


def test_the_bots_own_login_never_asks_even_when_listed(tmp_path: Path) -> None:
    timeline = [
        commented(_at(hours=1), "Which version do you run?", APP_BOT, "NONE", "Bot"),
        commented(_at(hours=2), ANSWER, REPORTER, "NONE"),
        closed(_at(days=2), commit=COMMIT),
    ]
    repo_file = f"dataset: {{triager_bots: [{json.dumps(APP_BOT)}]}}\n"
    assert _outcome(tmp_path, _scenario(timeline), repo_file, APP_BOT) == ("VALID", False)


# --- duplicate checks and questions that name an issue ------------------------------------

DUPLICATE_CHECKS = [
    "Is this the same as #101?",
    "Duplicate of #101?",
    "Possible duplicate of #101",
    "possible duplicate of Codertocat/Other-World#101?",
    "Isn't this https://github.com/Codertocat/Hello-World/issues/101?",
    "Same as [this one](https://github.com/Codertocat/Hello-World/issues/101)?",
    "Thanks for the report! Could this be a duplicate of #101 or #102?",
    "Same as GH-101?",
    "¿Es lo mismo que #101?",
    "Ist das ein Duplikat von #101?",
    "Est-ce un doublon de #101 ?",
    "É o mesmo problema que o #101?",
    "Это дубликат #101?",
    "重复 #101?",
]

REQUESTS_NAMING_AN_ISSUE = [
    "Does the workaround in #101 change anything for you?",
    "Which version do you run? #101 looks similar.",
    "Could you attach the whole log and your config file, as the reporter did in #101?",
    "Is this the same as #101? If not, which version do you run?",
    "¿Qué versión usas? #101 parece similar.",
]


@pytest.mark.parametrize("words", DUPLICATE_CHECKS)
def test_a_duplicate_check_answered_yes_asks_nothing(tmp_path: Path, words: str) -> None:
    timeline = [
        commented(_at(hours=1), words),
        commented(_at(hours=2), "Yes, sorry, I missed that one.", REPORTER, "NONE"),
        closed(_at(hours=3), reason="duplicate"),
    ]
    assert _outcome(tmp_path, _scenario(timeline, "duplicate"), None, None) == "DUPLICATE"


@pytest.mark.parametrize("words", REQUESTS_NAMING_AN_ISSUE)
def test_a_question_naming_an_issue_in_passing_still_asks(tmp_path: Path, words: str) -> None:
    timeline = [
        commented(_at(hours=1), words),
        commented(_at(hours=2), ANSWER, REPORTER, "NONE"),
        closed(_at(days=2), commit=COMMIT),
    ]
    assert _outcome(tmp_path, _scenario(timeline), None, None) == ("NEEDS_REFINEMENT", False)
