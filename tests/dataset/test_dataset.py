"""``triage-bot dataset`` on recorded GitHub traffic (cassettes/dataset_*.yaml) and on the
loopback GitHub of tests/support/dataset_server.py: each labelling rule, the text as first posted,
rate-limit waits (the sleep injected: nothing really waits), resume after an interruption,
a repository with no closed issues, and what a run costs in requests."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients.github_client import RATE_LIMIT_WINDOW_S, PyGithubClient
from bot.dataset import run_dataset
from bot.dataset.files import row_id, state_path
from bot.errors import GitHubRateLimited
from bot.evaluation.sets import EvalIssue, load_jsonl
from bot.gate.labels import file_gate_labels
from bot.repo_file import parse_repo_file
from tests.support import cassette
from tests.support.dataset_server import RESET_IN_S, LoopbackGitHub
from tests.support.dataset_world import FULL_BODY, REPO, REPO_FILE, SHORT_BODY, world

TOKEN = "test-token-not-real"

ROWS = {
    1: ("NEEDS_REFINEMENT", False, "label needs-info added by a maintainer 2 h after opening"),
    2: ("NEEDS_REFINEMENT", False, "label Status: More Details Please added by a maintainer"),
    3: ("NEEDS_REFINEMENT", False, "a collaborator asked a question 3 h after opening; the "
        "reporter answered 6 h later"),
    4: ("NEEDS_REFINEMENT", False, "the owner asked a question 1 h after opening; the reporter "
        "answered 5 h later"),
    5: ("NEEDS_REFINEMENT", False, "a member asked a question 24 h after opening, got no "
        "answer, and the issue was closed as not planned 29 d later"),
    6: ("VALID", False, "closed by commit 6dcb09b 2 d after opening"),
    7: ("VALID", False, "merged pull request #9007 references it 20 h after opening"),
    8: ("VALID", False, "label Confirmed added by a maintainer 1 h after opening"),
    9: ("VALID", False, "label triaged/ready added by a maintainer 1 h after opening"),
    10: ("NEEDS_REFINEMENT", True, "label needs-repro added by an app"),
    11: ("VALID", True, "label accepted added by a member 1 h after opening"),
    12: ("VALID", False, "closed by commit"),
    13: ("VALID", False, "closed by commit"),
    14: ("VALID", False, "closed by commit"),
    24: ("VALID", False, "label confirmed added by a maintainer"),
}  # fmt: skip
"""cassettes/dataset_rules.yaml: issue → (expected, borderline, how its rationale begins)."""

SKIPPED = {
    15: "a maintainer's question went unanswered",
    16: "closed as not planned, with no request for information",
    17: "closed with no fix, label or question from a maintainer",
    18: "closed as a duplicate, with no other decision",
    19: "opened by a bot",
    20: "opened by a maintainer (nobody judged the report)",
    21: "locked as off-topic, too heated or spam",
    22: "deleted or moved since it was listed",
    23: "edited after the first maintainer response, and GitHub keeps no earlier text",
    25: "edited after the first maintainer response, and GitHub keeps no earlier text",
}
"""cassettes/dataset_rules.yaml: issue → why it is left out."""


def _client(**overrides: Any) -> PyGithubClient:
    values: dict[str, Any] = {"token": TOKEN, "retries": 1, "backoff_s": 0.0}
    return PyGithubClient(**(values | overrides))


def _cli(out: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    given = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "https://api.github.com", **(env or {})}
    return CliRunner().invoke(
        main, ["dataset", "--repo", REPO, "--out", str(out), *args], env=given
    )


def _rows(out: Path) -> dict[int, EvalIssue]:
    return {int(r.id.rsplit("-", 1)[1]): r for r in load_jsonl(out, EvalIssue)}


def _skipped(out: Path) -> dict[int, str]:
    state = json.loads(state_path(out).read_text("utf-8"))
    return {int(k.rsplit("-", 1)[1]): v for k, v in state["repos"][REPO]["skipped"].items()}


def test_each_labelling_rule_on_recorded_traffic(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    captured: list[Any] = []
    with cassette("dataset_rules", captured) as cass:
        result = _cli(out)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    rows = _rows(out)
    assert {n: (r.expected, r.borderline) for n, r in rows.items()} == {
        n: (expected, borderline) for n, (expected, borderline, _) in ROWS.items()
    }
    for number, (_, _, rationale) in ROWS.items():
        assert rows[number].rationale.startswith(f"{REPO}#{number}: {rationale}")
    assert _skipped(out) == SKIPPED
    assert (rows[1].kind, rows[3].kind, rows[7].kind, rows[6].kind) == (
        "bug",
        "bug",
        "feature",
        "other",
    )
    # the file the repository keeps first, then one page, one GraphQL read, a timeline an issue
    paths = [(r.method, r.path) for r in captured]
    assert paths[0] == ("GET", f"/repos/{REPO}/contents/.github/triage-bot.yml")
    assert paths[1:3] == [("GET", f"/repos/{REPO}/issues"), ("POST", "/graphql")]
    assert sorted(p for _, p in paths[3:]) == sorted(
        f"/repos/{REPO}/issues/{n}/timeline" for n in [*ROWS, *SKIPPED] if n not in (19, 20, 21)
    )
    assert "labelled 9 VALID and 6 NEEDS_REFINEMENT (2 borderline); left out 10." in result.output
    # the rows are the eval's input as they are
    assert load_jsonl(out, EvalIssue)
    # the next step names the replies file calibrate needs, with options the commands have
    (nxt,) = [line for line in result.output.splitlines() if line.startswith("Next: ")]
    for step in nxt.removeprefix("Next: ").split("; then "):
        words = step.split()
        assert words[0] == "triage-bot"
        options = {o for p in main.commands[words[1]].params for o in p.opts}  # type: ignore[attr-defined]
        assert {w.strip("(,") for w in words if w.startswith(("--", "(--"))} <= options
    assert f"--issues {out} --save-replies replies.jsonl" in nxt
    assert f"calibrate --issues {out} --replies replies.jsonl" in nxt


def test_the_row_keeps_the_text_as_first_posted(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with cassette("dataset_first_posted") as cass:
        result = _cli(out)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    rows = _rows(out)
    # answered by editing the body (and renaming it) after a question: the first text
    assert (rows[90].expected, rows[90].title, rows[90].body) == (
        "NEEDS_REFINEMENT", "export broken", SHORT_BODY,
    )  # fmt: skip
    # edited ten minutes after posting, before anyone responded: what the maintainer read
    assert (rows[91].expected, rows[91].body) == ("VALID", FULL_BODY)
    # edited after the first response, its earlier text not kept / deleted from the history
    assert set(rows) == {90, 91}
    assert set(_skipped(out)) == {92, 93}


def _outcomes(out: Path) -> dict[int, Any]:
    """Issue → (expected, borderline, rationale after the issue's name), or its skip reason."""
    rows = {
        n: (r.expected, r.borderline, r.rationale.split(": ", 1)[1]) for n, r in _rows(out).items()
    }
    return rows | (_skipped(out) if state_path(out).exists() else {})


VALID_BY_COMMIT = ("VALID", False, "closed by commit 6dcb09b 2 d after opening, with no request "
                   "for information before")  # fmt: skip


def _app_asked(label: str, after: str) -> tuple[str, bool, str]:
    """An app's needs-info label, then a fix with no answer: borderline."""
    rationale = (
        f"label {label} added by an app {after} after opening; borderline: closed by commit "
        "6dcb09b with no answer from the reporter first"
    )
    return ("NEEDS_REFINEMENT", True, rationale)


@pytest.mark.parametrize(
    ("login", "expected"),
    [
        # unset: the Actions token's login; the repository's gate label never counts
        (None, {31: VALID_BY_COMMIT, 32: VALID_BY_COMMIT, 33: _app_asked("needs-repro", "1 h")}),
        ("github-actions[bot]", {32: VALID_BY_COMMIT}),
        # the bot writes as an app: the Actions token's label is another app's, and counts
        ("my-triage-app[bot]", {31: VALID_BY_COMMIT, 32: _app_asked("awaiting-response", "1 min")}),
        ("issue-labeler[bot]", {31: VALID_BY_COMMIT, 33: VALID_BY_COMMIT}),
    ],
)
def test_the_bots_own_labels_and_its_renamed_gate_labels_are_no_signal(
    tmp_path: Path, login: str | None, expected: dict[int, Any]
) -> None:
    out = tmp_path / "set.jsonl"
    env = {"TRIAGE_BOT_LOGIN": login} if login else {}
    with cassette("dataset_renamed_gate_labels") as cass:
        result = _cli(out, env=env)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    got = _outcomes(out)
    assert {n: got[n] for n in expected} == expected
    assert set(got) == {31, 32, 33}


TRIAGER_ASKED = ("NEEDS_REFINEMENT", False, "a triager bot asked a question 10 min after opening; "
                 "the reporter answered 1 h later")  # fmt: skip
STALE_VALID = ("VALID", False, "closed by commit 6dcb09b 40 d after opening, with no request "
               "for information before")  # fmt: skip
STALE_ASKED = ("NEEDS_REFINEMENT", False, "a triager bot asked a question 30 d after opening; "
               "the reporter answered 24 h later")  # fmt: skip


@pytest.mark.parametrize(
    ("triager_bots", "expected"),
    [
        (None, {41: STALE_VALID, 42: TRIAGER_ASKED}),  # the recorded file lists triage-helper
        ([], {41: STALE_VALID, 42: VALID_BY_COMMIT}),
        (["Stale[bot]", "triage-helper[bot]"], {41: STALE_ASKED, 42: TRIAGER_ASKED}),
    ],
)
def test_only_a_persons_question_asks_unless_the_file_lists_the_bot(
    tmp_path: Path, triager_bots: list[str] | None, expected: dict[int, Any]
) -> None:
    out = tmp_path / "set.jsonl"
    args: list[str] = []
    if triager_bots is not None:  # a local repository file instead of the recorded one
        local = tmp_path / "triage-bot.yml"
        local.write_text(f"dataset: {{triager_bots: {json.dumps(triager_bots)}}}\n", "utf-8")
        args = ["--repo-file", str(local)]
    with cassette("dataset_stale_bot") as cass:
        result = _cli(out, *args)
    assert result.exit_code == 0, result.output
    assert cass.all_played or triager_bots is not None  # a local file: no contents read
    assert _outcomes(out) == expected


def test_a_duplicate_check_is_not_a_request_for_information(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with cassette("dataset_duplicate_question") as cass:
        result = _cli(out)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    assert _outcomes(out) == {
        51: "closed as a duplicate, with no other decision",
        52: ("NEEDS_REFINEMENT", False, "a member asked a question 1 h after opening; the "
             "reporter answered 4 h later"),
    }  # fmt: skip


def test_an_issue_transferred_after_listing_is_left_out_and_counted(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    captured: list[Any] = []
    with cassette("dataset_transferred", captured) as cass:
        result = _cli(out)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    got = _outcomes(out)
    assert got[61] == "transferred to another repository since it was listed"
    assert got[62][0] == "NEEDS_REFINEMENT"
    # the 301 was followed to the repository the issue went to, and nothing was read twice
    paths = [r.path for r in captured if r.path.endswith("/timeline")]
    assert paths == [
        f"/repos/{REPO}/issues/62/timeline",
        f"/repos/{REPO}/issues/61/timeline",
        "/repositories/186853099/issues/361/timeline",
    ]
    assert "1  transferred to another repository since it was listed" in result.output


def test_a_rename_in_the_second_of_a_label_keeps_the_timelines_order(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with cassette("dataset_same_second_rename") as cass:
        result = _cli(out)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    rows = _rows(out)
    assert (rows[71].expected, rows[71].title) == ("NEEDS_REFINEMENT", "export broken")
    assert (rows[72].expected, rows[72].title) == ("NEEDS_REFINEMENT", "Export fails (72)")


def _patient(sleeps: list[float], **overrides: Any) -> PyGithubClient:
    now = [1709544600.0]  # the cassette's answers name resets 1800 s after this

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    values: dict[str, Any] = {"sleep": sleep, "clock": lambda: now[0]}
    values["max_rate_limit_wait_s"] = RATE_LIMIT_WINDOW_S
    return _client(**(values | overrides))


def test_rate_limits_are_waited_for_not_failed_on(tmp_path: Path) -> None:
    sleeps: list[float] = []
    out = tmp_path / "set.jsonl"
    with cassette("dataset_rate_limit") as cass:
        report = run_dataset(_patient(sleeps), REPO, out)
    assert cass.all_played
    # 403 primary on the list: until its reset; an answer leaving 10 (≤ the reserve): until
    # the reset before the next request; GraphQL RATE_LIMITED: its reset; 429: Retry-After
    assert sleeps == [RESET_IN_S + 1, RESET_IN_S + 1, RESET_IN_S + 1, 30]
    assert report.progress.rows == 3
    assert report.progress.rate_limit is not None


@pytest.mark.parametrize("longest", [0.0, 29.0, float(RESET_IN_S)])
def test_a_wait_longer_than_allowed_fails_and_keeps_nothing_half_done(
    tmp_path: Path, longest: float
) -> None:
    sleeps: list[float] = []
    out = tmp_path / "set.jsonl"
    with cassette("dataset_rate_limit"), pytest.raises(GitHubRateLimited) as info:
        run_dataset(_patient(sleeps, max_rate_limit_wait_s=longest), REPO, out)
    assert info.value.exit_code == 4
    assert sleeps == []
    assert not out.exists()


def test_a_run_stopped_midway_resumes_where_it_stopped(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    captured: list[Any] = []

    def interrupt(progress: Any) -> None:
        if progress.rows >= 2:
            raise KeyboardInterrupt

    with cassette("dataset_resume", captured) as cass:
        with pytest.raises(KeyboardInterrupt):
            run_dataset(_client(sleep=lambda _: None), REPO, out, on_progress=interrupt)
        first = [r.path for r in captured]
        assert list(_rows(out)) == [8, 7]
        resumed = run_dataset(_client(sleep=lambda _: None), REPO, out)
        second = [r.path for r in captured[len(first) :]]
        unchanged = run_dataset(_client(sleep=lambda _: None), REPO, out)
        third = captured[len(first) + len(second) :]
    assert cass.all_played
    rows = _rows(out)
    assert sorted(rows) == [1, 3, 4, 5, 6, 7, 8]  # 2: its label is the repository file's
    assert len(load_jsonl(out, EvalIssue)) == 7  # no row twice
    # the second run read the page again, and only the timelines it had not
    timelines = [p for p in second if p.endswith("/timeline")]
    assert sorted(timelines) == [f"/repos/{REPO}/issues/{n}/timeline" for n in range(1, 7)]
    assert (resumed.progress.earlier, resumed.progress.read) == (2, 6)
    # the third asked the page with its ETag: 304, nothing else read
    (ask,) = third
    assert ask.headers.get("If-None-Match", "").startswith('W/"')
    assert (unchanged.progress.unchanged_pages, unchanged.progress.read) == (1, 0)
    assert _skipped(out) == {2: "closed with no fix, label or question from a maintainer"}


def test_a_repository_with_no_closed_issues_says_so_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with cassette("dataset_no_closed_issues") as cass:
        result = _cli(out)
    assert cass.all_played
    assert result.exit_code == 0
    assert result.output.strip().splitlines()[-1] == (
        f"{REPO} has no closed issues (pull requests are not issues): "
        "nothing to label, nothing written."
    )
    assert not out.exists()
    assert not state_path(out).exists()


def test_without_a_token_it_says_what_to_set(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["dataset", "--repo", REPO, "--out", str(tmp_path / "x.jsonl")],
        env={"GITHUB_TOKEN": ""},
    )
    assert result.exit_code == 2
    assert "set GITHUB_TOKEN" in result.output


def test_200_issues_on_a_loopback_github(tmp_path: Path) -> None:
    """A real HTTP server: ≤ 3 requests an issue, the right row or reason for every rule."""
    scenarios = world(200)
    out = tmp_path / "set.jsonl"
    with LoopbackGitHub(scenarios) as github:
        client = _client(base_url=github.base_url, sleep=lambda _: None)
        file = parse_repo_file(REPO_FILE)
        report = run_dataset(client, REPO, out, config=file.dataset, gate=file_gate_labels(file))
        spent = sum(github.requests.values())
    assert spent / len(scenarios) <= 3
    rows, skipped = _rows(out), _skipped(out)
    for s in scenarios:
        if s.expected is None:
            assert s.number not in rows, s.rule
            assert skipped.get(s.number) is not None, s.rule
            continue
        row = rows[s.number]
        assert (row.expected, row.borderline, row.title, row.body) == (
            s.expected, s.borderline, s.title, s.body,
        ), s.rule  # fmt: skip
    assert report.progress.read == len(scenarios)
    assert row_id(REPO, 1) in {r.id for r in load_jsonl(out, EvalIssue)}


def test_a_reset_is_waited_for_once(tmp_path: Path) -> None:
    """After waiting for a rate-limit answer's reset, the retry does not wait for the same
    reset again before its request (whatever the clock says after the wait)."""
    sleeps: list[float] = []
    client = _client(
        sleep=sleeps.append,
        clock=lambda: 1709544600.0,
        max_rate_limit_wait_s=10 * RATE_LIMIT_WINDOW_S,
    )
    with cassette("dataset_rate_limit"):
        run_dataset(client, REPO, tmp_path / "set.jsonl")
    assert len(sleeps) == 4  # list 403, the low answer, GraphQL RATE_LIMITED, the 429


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    """``path`` made immutable (``chattr +i``): not writable even by root, as tests run."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is refused here: {made.stderr.decode(errors='replace')}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", "utf-8")
    return notes


def _one_row(tmp_path: Path) -> Path:
    out = tmp_path / "set.jsonl"
    row = EvalIssue(id=row_id(REPO, 1), kind="bug", title="t", body="b", expected="VALID",
                    rationale=f"{REPO}#1: closed by commit")  # fmt: skip
    out.write_text(row.model_dump_json() + "\n", "utf-8")
    return out


UNWRITABLE: dict[str, Callable[[Path], tuple[Path, Path | None]]] = {
    "a path under a file": lambda tmp: (_notes(tmp) / "set.jsonl", None),
    "a path two folders under a file": lambda tmp: (_notes(tmp) / "sub" / "set.jsonl", None),
    "in a folder nobody may write to": lambda tmp: (tmp / "set.jsonl", tmp),
    "a new file in a new folder there": lambda tmp: (tmp / "new" / "set.jsonl", tmp),
    "a row file nobody may write to": lambda tmp: (_one_row(tmp), tmp / "set.jsonl"),
}
"""``--out`` that cannot be written → (the path given, what is made immutable)."""


@pytest.mark.parametrize("case", UNWRITABLE)
def test_an_out_that_cannot_be_written_is_refused_before_any_request(
    tmp_path: Path, case: str
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    out, frozen = UNWRITABLE[case](folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    captured: list[Any] = []
    with (
        cassette("dataset_no_closed_issues", captured),
        _immutable(frozen) if frozen else nullcontext(),
    ):
        result = _cli(out)
    assert captured == []
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a message, no traceback
    assert f"--out {out}: cannot be" in result.output
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
