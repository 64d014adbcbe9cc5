"""The type label the gate adds from a type classifier's guess (bot.gate.type_label), through
the runner on the fake GitHub: one write with the gate label, the threshold, the labels it
never touches, the kind it gives the validator, skip rules, where the model comes from and a
model that cannot be used."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import runner
from bot.cli import main
from bot.clients.github_port import LabelEvent
from bot.config import Settings
from bot.context import JobTypeModel
from bot.errors import ConfigError
from bot.gate.type_label import plan_type
from bot.gate.validator import checklist_of, system_prompt
from bot.repo_file import REPO_FILE_PATH, TypeLabels, TypeName, parse_repo_file
from bot.run_report import RunReport
from bot.type_guess import MAX_TYPE_MODEL_BYTES, TypeGuess
from bot.types.fit import fit_type_model
from tests.support import FakeChatModel, guards_policy, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY, VALID_REPLY, reply
from tests.support.type_rows import made_up_rows

REPO = "Codertocat/Hello-World"
BOT = "github-actions[bot]"
MODEL_PATH = "triage/types.json"


@dataclass
class FakeClassifier:
    """A loaded type model that answers one guess and records what it was asked."""

    answer: TypeGuess
    asked: list[tuple[str, str]] = field(default_factory=list)

    def guess(self, title: str, body: str) -> TypeGuess:
        self.asked.append((title, body))
        return self.answer


@dataclass
class FakeLoader:
    """The loader the runner builds jobs with: a model file here is the guess as JSON."""

    loaded: list[str] = field(default_factory=list)
    classifiers: list[FakeClassifier] = field(default_factory=list)

    def __call__(self, data: bytes, source: str) -> FakeClassifier:
        self.loaded.append(source)
        try:
            fields = json.loads(data)
            made = FakeClassifier(TypeGuess(**fields))
        except (ValueError, TypeError):
            raise ConfigError(f"{source}: not a type model") from None
        self.classifiers.append(made)
        return made


def model_file(kind: TypeName, confidence: float, threshold: float | None) -> str:
    return json.dumps({"type": kind, "confidence": confidence, "threshold": threshold})


@pytest.fixture
def loader(monkeypatch: pytest.MonkeyPatch) -> FakeLoader:
    made = FakeLoader()
    monkeypatch.setattr(runner, "load_type_model", made)
    return made


def _file(types: str = f"types:\n  model: {MODEL_PATH}\n", extra: str = "") -> str:
    return types + extra


def _serve(github: FakeGitHub, text: str, model: str | None = None) -> None:
    """The repository file and the type model on the default branch (``master``)."""
    github.repo_files[("master", REPO_FILE_PATH)] = text
    if model is not None:
        github.repo_files[("master", MODEL_PATH)] = model


def _payload(
    action: str = "opened", labels: tuple[str, ...] = (), body: str = COMPLETE_BODY
) -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")  # repository.default_branch: master
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "an earlier body"}}
    payload["issue"].update(number=1, body=body, labels=[{"name": n} for n in labels])
    return payload


def _run(tmp_path: Path, payload: dict[str, Any], **kw: Any) -> RunReport:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
        bot_login=BOT,
    )
    return runner.run_event(replace(base, **kw))


def _label_writes(github: FakeGitHub) -> list[tuple[str, ...]]:
    return [w for w in github.writes if w[0] == "add_labels"]


# --- one write for both labels ------------------------------------------------------------------
def test_a_confident_guess_adds_its_label_in_the_gate_labels_request(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload())
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", "bug")]
    assert github.requests.count("add_labels") == 1
    assert github.requests.count("repo_file") == 2  # the repository file, then the model
    assert "label_events" not in github.requests  # an opened issue has no history to read
    assert github.label_looks["bug"][1].startswith("triage-bot:")
    assert "type:     bug 0.93, threshold 0.85: +bug" in report.text
    assert "+ready-for-dev  +bug" in report.text
    assert "Type: bug 0.93, threshold 0.85: +bug" in render(report.summary).text
    assert loader.classifiers[0].asked == [(_payload()["issue"]["title"], COMPLETE_BODY)]
    assert report.warnings == []


def test_a_fitted_model_file_is_applied_by_the_runners_own_loader(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    # the real loader and model file: fitted on made-up rows, its bug threshold set low
    fitted = fit_type_model(made_up_rows(40), min_precision=0.9).model
    fitted = fitted.model_copy(update={"thresholds": {**fitted.thresholds, "bug": 0.4}})
    title, body = "Crash with a traceback", "It fails with an error: broken, a regression."
    guess = fitted.guess(title, body)
    assert guess.type == "bug"
    assert guess.clears
    _serve(github, _file(), fitted.to_json())
    model.enqueue(VALID_REPLY)
    payload = _payload(body=body)
    payload["issue"]["title"] = title
    report = _run(tmp_path, payload)
    # one request for the gate label (this short body needs refinement) and the type label
    assert _label_writes(github) == [("add_labels", "1", "needs-refinement", "bug")]
    assert f"type:     bug {guess.confidence:.2f}, threshold 0.40: +bug" in report.text
    assert report.warnings == []


def test_the_type_label_is_created_once_and_remembered_in_the_store(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    loader: FakeLoader,
    store_target: str,
) -> None:
    _serve(github, _file(), model_file("question", 0.95, 0.9))
    model.enqueue(VALID_REPLY, VALID_REPLY)
    _run(tmp_path, _payload(), db_path=store_target)
    assert github.requests.count("ensure_label") == 2  # the gate label and the type label
    first = len(github.requests)
    issue = _payload()
    issue["issue"]["number"] = 2
    _run(tmp_path, issue, db_path=store_target)
    assert "ensure_label" not in github.requests[first:]
    assert _label_writes(github)[-1] == ("add_labels", "2", "ready-for-dev", "question")


# --- below the threshold ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("threshold", "said"),
    [(0.80, "below its threshold 0.80"), (None, "a type the model never applies")],
)
def test_a_guess_below_its_threshold_writes_nothing_and_the_plan_names_it(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    loader: FakeLoader,
    threshold: float | None,
    said: str,
) -> None:
    _serve(github, _file(), model_file("question", 0.62, threshold))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload())
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert "question" not in github.repo_labels
    assert f"type:     question 0.62, {said}: no label" in report.text
    assert f"Type: question 0.62, {said}: no label" in render(report.summary).text


def test_a_dry_run_names_the_label_it_would_add_and_writes_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload(), dry_run=True)
    assert github.writes == []
    assert "type:     bug 0.93, threshold 0.85: +bug" in report.text


# --- labels it never touches --------------------------------------------------------------------
RENAMED = "types:\n  model: triage/types.json\n  labels:\n    bug: ['kind: crash report', bug]\n"


@pytest.mark.parametrize(
    ("on_issue", "types"),
    [(("kind: crash report",), RENAMED), (("Type: Question",), _file()), (("bug",), RENAMED)],
    ids=["renamed-multi-word", "a-default-name-of-another-type", "a-later-name"],
)
def test_an_issue_with_a_type_label_gets_none(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    loader: FakeLoader,
    on_issue: tuple[str, ...],
    types: str,
) -> None:
    _serve(github, types, model_file("bug", 0.99, 0.5))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload(labels=on_issue))
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert "no label" in report.text
    assert repr(on_issue[0]) in report.text


def test_the_renamed_label_is_the_one_applied(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, RENAMED, model_file("bug", 0.99, 0.5))
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload())
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", "kind: crash report")]


def test_a_type_label_a_person_removed_is_not_added_again_on_edit(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    github.issue_labels[1] = ["ready-for-dev"]
    github.events[1] = [
        LabelEvent("ready-for-dev", BOT, "Bot"),
        LabelEvent("bug", BOT, "Bot"),
        LabelEvent("bug", "octocat", "User", removed=True),
    ]
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload("edited", ("ready-for-dev",), COMPLETE_BODY + " Again."))
    assert _label_writes(github) == []
    assert "'bug' was removed: no label" in report.text
    assert github.requests.count("label_events") == 1  # read once for the run


def test_the_bots_own_type_label_is_never_swapped(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("question", 0.97, 0.85))
    github.issue_labels[1] = ["ready-for-dev", "bug"]
    github.events[1] = [LabelEvent("ready-for-dev", BOT, "Bot"), LabelEvent("bug", BOT, "Bot")]
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload("edited", ("ready-for-dev", "bug"), COMPLETE_BODY + " Again."))
    assert github.writes == []
    assert github.issue_labels[1] == ["ready-for-dev", "bug"]
    assert "question 0.97, the issue has 'bug': no label" in report.text


def test_a_stale_payload_still_adds_no_second_type_label(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("question", 0.97, 0.85))
    github.issue_labels[1] = ["ready-for-dev", "bug"]
    github.events[1] = [LabelEvent("ready-for-dev", BOT, "Bot"), LabelEvent("bug", BOT, "Bot")]
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload("edited", ("ready-for-dev",), COMPLETE_BODY + " Again."))
    assert _label_writes(github) == []


# --- the predicted type is the issue's kind in the same run -------------------------------------
VERSION_FILE = """\
elements:
  - name: version
    definition: the version of the tool you ran (e.g. 2.3.1)
    required_for: [bug]
"""


def _with_policy(text: str) -> str:
    """``text`` with a ``gate.policy`` measured for the fake model and this file's prompt."""
    settings = replace(Settings(), repo_file=parse_repo_file(text))
    version = system_prompt(checklist_of(settings))[1]
    policy = guards_policy(prompt_version=version).model_dump(mode="json", exclude_none=True)
    return text + "gate:\n  policy: " + json.dumps(policy) + "\n"


@pytest.mark.parametrize(
    ("confidence", "label"), [(0.93, "needs-refinement"), (0.5, "ready-for-dev")]
)
def test_a_guessed_bug_requires_what_bugs_require_in_the_same_run(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    loader: FakeLoader,
    confidence: float,
    label: str,
) -> None:
    _serve(
        github,
        _with_policy(VERSION_FILE + _file()),
        model_file("bug", confidence, 0.85),
    )
    problem = "README.md says to comitt your changes"
    model.enqueue(reply("VALID", "The wording is given.", problem=problem, version=""))
    report = _run(tmp_path, _payload())
    assert report.outputs["label"] == label  # only a guess that clears its threshold counts
    if label == "needs-refinement":
        assert _label_writes(github) == [("add_labels", "1", "needs-refinement", "bug")]


# --- skip.labels ignores what the bot added -----------------------------------------------------
SKIP_QUESTIONS = _file(extra="skip:\n  labels: [question]\n")


def test_a_question_label_the_bot_added_does_not_skip_the_issue(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, SKIP_QUESTIONS, model_file("question", 0.95, 0.9))
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload())
    assert github.issue_labels[1] == ["ready-for-dev", "question"]
    model.enqueue(VALID_REPLY)
    edited = _payload("edited", ("ready-for-dev", "question"), COMPLETE_BODY + " More detail.")
    report = _run(tmp_path, edited)
    assert "skipped" not in report.text
    assert len(model.history) == 2  # judged again
    assert github.requests.count("label_events") == 1  # one read: the skip and the plan share it


def test_a_persons_question_label_still_skips_the_issue(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, SKIP_QUESTIONS, model_file("bug", 0.95, 0.9))
    github.label_by_hand(1, "question")
    report = _run(tmp_path, _payload("edited", ("question",)))
    assert "which .github/triage-bot.yml skips" in report.text
    assert model.history == []
    github.requests.clear()
    report = _run(tmp_path, _payload("opened", ("question",)))  # an issue form's label
    assert "skips" in report.text
    assert github.requests == ["repo_file"]  # and no label events: none can be the bot's


# --- where the model comes from, and a model that cannot be used --------------------------------
def test_no_type_model_configured_changes_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, "types:\n  labels:\n    bug: ['kind: crash report']\n")
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload())
    assert github.requests == ["repo_file", "ensure_label", "add_labels"]
    assert "type:" not in report.text
    assert "**Type:**" not in report.summary
    assert loader.loaded == []


def test_a_local_type_model_wins_over_the_repository_files(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    local = tmp_path / "types.json"
    local.write_text(model_file("feature", 0.9, 0.8))
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload(), types_model=local)
    assert loader.loaded == [str(local)]
    assert github.requests.count("repo_file") == 1  # the repository's model is not read
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", "enhancement")]


@pytest.mark.parametrize(
    ("served", "problem"),
    [
        ("{not json", "triage/types.json in the repository: not a type model"),
        (None, "the repository's default branch does not hold it"),
    ],
    ids=["broken", "missing"],
)
def test_a_model_that_cannot_be_used_is_a_warning_and_the_gate_labels_as_usual(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    loader: FakeLoader,
    served: str | None,
    problem: str,
) -> None:
    _serve(github, _file(), served)
    model.enqueue(VALID_REPLY)
    path = write_payload(tmp_path, _payload())
    result = CliRunner().invoke(
        main,
        ["run", "--event-name", "issues", "--event-path", str(path)],
        env={
            "GITHUB_TOKEN": "t",
            "TRIAGE_DB": str(tmp_path / "triage.db"),
            "TRIAGE_BOT_LOGIN": BOT,
            "TRIAGE_MODEL": "fake",
        },
    )
    assert result.exit_code == 0, result.output
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert problem in result.output
    assert "type model not applied" in result.output


class _Failing:
    def guess(self, title: str, body: str) -> TypeGuess:
        raise MemoryError("a model that fails on this text")


def test_a_model_that_fails_on_an_issue_is_a_warning_and_the_gate_labels_as_usual(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "load_type_model", lambda data, source: _Failing())
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload())
    assert report.warnings == [
        "type model not applied: triage/types.json in the repository: failed on #1 (MemoryError)"
    ]
    assert "type:     not guessed: triage/types.json in the repository: failed on #1" in (
        report.text
    )
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]


def test_without_a_loader_a_configured_model_is_a_warning(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "load_type_model", None)
    _serve(github, _file(), model_file("bug", 0.93, 0.85))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload())
    assert report.warnings == [
        "type model not applied: triage/types.json in the repository: this triage-bot "
        "cannot load type models"
    ]
    assert "type:     not guessed:" in report.text
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]


# --- /triage and the backlog ---------------------------------------------------------------------
def test_the_backlog_dry_run_lists_each_guess(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    github.repo_files[("main", REPO_FILE_PATH)] = _file()
    github.repo_files[("main", MODEL_PATH)] = model_file("bug", 0.93, 0.85)
    github.open_issue_list = [
        {"number": n, "title": "Crash", "body": COMPLETE_BODY, "state": "open", "labels": []}
        for n in (1, 2)
    ]
    github.label_by_hand(2, "bug")
    github.unlabel_by_hand(2, "bug")
    model.enqueue(VALID_REPLY, VALID_REPLY)
    settings = Settings(github_token="t", db_path=tmp_path / "triage.db", dry_run=True)
    report = runner.run_backlog(settings, REPO)
    assert "#1: ready-for-dev (5 ms); type: bug 0.93, threshold 0.85: +bug" in report.text
    assert "#2: ready-for-dev (5 ms); type: bug 0.93, 'bug' was removed" in (report.text)
    assert github.writes == []
    assert len(loader.loaded) == 1  # read and loaded once for the job's issues


def test_triage_adds_the_type_label_with_the_gate_label(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("feature", 0.91, 0.9))
    payload = load_webhook("issue_comment.created.0")  # the first issue, default branch master
    payload["comment"]["body"] = "/triage"
    payload["issue"].update(body=COMPLETE_BODY, labels=[])
    github.permissions[payload["comment"]["user"]["login"]] = "admin"
    github.issue_texts[1] = (payload["issue"]["title"], COMPLETE_BODY)
    model.enqueue(VALID_REPLY)
    base = Settings(
        github_token="t",
        event_name="issue_comment",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
        bot_login=BOT,
    )
    report = runner.run_event(base)
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", "enhancement")]
    assert "feature 0.91, threshold 0.90: +enhancement" in report.text
    assert github.requests.count("label_events") == 1  # /triage re-runs: who removed one


SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"


def test_the_model_is_kept_per_commit_like_the_repository_file(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    github.repo_files[(SHA, REPO_FILE_PATH)] = _file()
    github.repo_files[(SHA, MODEL_PATH)] = model_file("bug", 0.93, 0.85)
    model.enqueue(VALID_REPLY, VALID_REPLY)
    at_commit = {"commit_sha": SHA, "git_ref": "refs/heads/master"}
    _run(tmp_path, _payload(), **at_commit)
    assert github.reads.count(("repo_file", f"{MODEL_PATH}@{SHA}")) == 1
    second = _payload()
    second["issue"]["number"] = 2
    _run(tmp_path, second, **at_commit)
    assert github.reads.count(("repo_file", f"{MODEL_PATH}@{SHA}")) == 1  # the store's copy
    assert loader.loaded == [f"{MODEL_PATH} in the repository"] * 2  # loaded once per job
    assert _label_writes(github)[-1] == ("add_labels", "2", "ready-for-dev", "bug")


def test_a_local_model_over_the_size_bound_is_a_warning(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    local = tmp_path / "types.json"
    local.write_bytes(b" " * (MAX_TYPE_MODEL_BYTES + 1))
    _serve(github, "")
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _payload(), types_model=local)
    assert loader.loaded == []
    (warning,) = report.warnings
    assert "cannot be read" in warning
    assert f"larger than {MAX_TYPE_MODEL_BYTES:,} bytes" in warning
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]


@pytest.mark.parametrize(
    ("confidence", "threshold", "clears"),
    [(0.8, 0.8, True), (0.7999, 0.8, False), (1.0, None, False), (0.0, 0.0, True)],
)
def test_a_guess_clears_its_threshold_at_or_above_it(
    confidence: float, threshold: float | None, clears: bool
) -> None:
    assert TypeGuess("bug", confidence, threshold).clears is clears


def test_a_backlog_with_a_broken_model_warns_once_and_labels_as_usual(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    github.repo_files[("main", REPO_FILE_PATH)] = _file()
    github.repo_files[("main", MODEL_PATH)] = "{not json"
    github.open_issue_list = [
        {"number": n, "title": "Crash", "body": COMPLETE_BODY, "state": "open", "labels": []}
        for n in (1, 2)
    ]
    model.enqueue(VALID_REPLY, VALID_REPLY)
    report = runner.run_backlog(Settings(github_token="t", db_path=tmp_path / "triage.db"), REPO)
    assert report.warnings == [
        "type model not applied: triage/types.json in the repository: not a type model"
    ]
    assert report.text.count("not a type model") == 1
    assert "Warning: type model not applied" in render(report.summary).text
    assert _label_writes(github) == [
        ("add_labels", "1", "ready-for-dev"),
        ("add_labels", "2", "ready-for-dev"),
    ]


def test_a_guess_below_its_threshold_reads_no_label_events_on_edit(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, loader: FakeLoader
) -> None:
    _serve(github, _file(), model_file("bug", 0.5, 0.85))
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload("edited", (), COMPLETE_BODY + " Again."))
    assert "label_events" not in github.requests
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]


@pytest.mark.parametrize(
    ("confidence", "threshold", "line"),
    [
        (0.6799, 0.6812, "question 0.680, below its threshold 0.681: no label"),
        (0.62, 0.8, "question 0.62, below its threshold 0.80: no label"),
        (0.68121, 0.68123, "question 0.6812, below its threshold 0.6812: no label"),
    ],
)
def test_a_guess_near_its_threshold_gets_the_digits_that_tell_them_apart_up_to_four(
    confidence: float, threshold: float, line: str
) -> None:
    plan = plan_type(
        JobTypeModel("m", None),
        TypeLabels(),
        TypeGuess("question", confidence, threshold),
        [],
        events=None,
        login=lambda: BOT,
    )
    assert plan.describe() == line
