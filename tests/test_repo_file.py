"""The repository's ``.github/triage-bot.yml`` (each repository sets its own criteria).

Parsing (:mod:`bot.repo_file`): a broken file names the key and its line. Precedence
(:meth:`bot.config.Settings.with_repository_file`): flags > action inputs > file > defaults.
Through the runner with the stateful fake GitHub (tests/support/fake_github.py, files by branch):
the
file is read once, from the payload's default branch, never from a PR head; a broken file fails
the run with exit 2 and writes nothing; skip rules skip the event; the author comment is off
by file. Through the PyGithub adapter on recorded traffic
(cassettes/e2e_repo_file_author_comment_off.yaml, GitHub's "Get repository content" shape:
base64 ``content``, ``encoding``, ``sha``): the file turns the comment off.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import bot.clients.github_client as gc
from bot import runner
from bot.cli import main
from bot.config import Settings
from bot.errors import ConfigError, ModelUnavailable
from bot.gate.labels import READY, file_gate_labels
from bot.repo_file import (
    REPO_FILE_PATH,
    SETTING_OF_KEY,
    RepoFile,
    SkipRules,
    json_schema,
    parse_repo_file,
)
from bot.run_report import RunReport
from bot.setting_spec import IntRange
from bot.settings_table import SETTINGS
from tests.support import ROOT, FakeChatModel, cassette, load_webhook, write_payload
from tests.support.fake_github import CONFIG_READ, FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY

SHORT_BODY = "The app crashes when I click save."

FULL = """\
# yaml-language-server: $schema=https://example.invalid/triage-bot.schema.json
author_comment:
  enabled: false
skip:
  labels: [question]
  authors: [dependabot-preview]
  bots: true
  titles: ['^\\[WIP\\]']
audit:
  skip_globs: ['docs/**']
  max_segments: 3
models:
  validator: qwen2.5-coder:7b
  auditor: qwen2.5-coder:14b
"""


def _issue(body: str = COMPLETE_BODY, **issue: Any) -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")  # repository.default_branch: master
    payload["issue"]["body"] = body
    payload["issue"].update(issue)
    return payload


def _run(tmp_path: Path, payload: dict[str, Any], event: str = "issues", **kw: Any) -> RunReport:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name=event,
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
    )
    return runner.run_event(replace(base, **kw))


# --- parsing ----------------------------------------------------------------------------------
def test_every_key_parses_into_the_settings_it_sets() -> None:
    parsed = parse_repo_file(FULL)
    assert parsed.settings() == {
        "author_comment": False,
        "validator_model": "qwen2.5-coder:7b",
        "audit_model": "qwen2.5-coder:14b",
        "max_segments": 3,
        "skip_globs": ("docs/**",),
    }
    assert parse_repo_file("") == RepoFile()
    assert parse_repo_file("# only a comment\n").settings() == {}


def _range(setting: str) -> IntRange | None:
    rule = next(spec.parse for spec in SETTINGS if spec.name == setting)
    return rule if isinstance(rule, IntRange) else None


@pytest.mark.parametrize("key", [k for k, n in SETTING_OF_KEY.items() if _range(n)])
def test_a_file_value_is_bounded_by_its_settings_row(key: str) -> None:
    """A value the file sets is held to the bounds of the setting's row, not bounds of its own:
    the file accepts a number exactly when the row does."""
    rule = _range(SETTING_OF_KEY[key])
    assert rule is not None
    section, name = key.split(".")
    edges = [rule.low - 1, rule.low, *([rule.high, rule.high + 1] if rule.high else [])]
    for value in edges:
        text = f"{section}:\n  {name}: {value}\n"
        try:
            rule(value)
        except ValueError:
            with pytest.raises(ConfigError, match=re.escape(key)):
                parse_repo_file(text)
        else:
            assert parse_repo_file(text).settings()[SETTING_OF_KEY[key]] == value


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("skip:\n  labels: [a]\n  labelz: [b]\n", "line 3: skip.labelz: Extra inputs"),
        ("audit:\n  max_segments: '8'\n", "line 2: audit.max_segments: Input should be a valid"),
        ("audit:\n  max_segments: 99\n", "line 2: audit.max_segments: Input should be less"),
        ("skip:\n  titles:\n    - ok\n    - '(unclosed'\n", "line 4: skip.titles"),
        ("elements:\n  - name: version\n", "line 2: elements.0.definition: Field required"),
        (
            "elements:\n  - name: version\n    definition: the version\n"
            "  - name: Bad-Name\n    definition: a thing you ran\n",
            "line 4: elements.1.name: String should match pattern",
        ),
        (
            "elements:\n  - name: trigger\n    definition: the steps you took\n",
            "line 2: elements.0.name: Value error, 'trigger' is the bot's own",
        ),
        (
            "elements:\n  - {name: os, definition: the operating system}\n"
            "  - {name: os, definition: the OS and its version}\n",
            "line 1: elements: Value error, element names must be unique: os repeats",
        ),
        (
            "elements:\n  - name: version\n    definition: 'the version </issue> now'\n",
            "line 3: elements.0.definition: Value error, must not hold < or >",
        ),
        (
            "elements:\n  - name: version\n    definition: the version\n    required_for: []\n",
            "line 4: elements.0.required_for: List should have at least 1 item",
        ),
        (
            "elements:\n"
            + "".join(f"  - {{name: e{i}, definition: thing {i} here}}\n" for i in range(4)),
            "line 1: elements: List should have at most 3 items",
        ),
        ("models: [a]\n", "line 1: models: Input should be"),
        ("labels:\n  ready:\n    color: '#00ff00'\n", "line 3: labels.ready.color: String should"),
        (
            "types:\n  labels: {bug: [defect]}\nduplicates:\n  label: Defect\n",
            "line 3: duplicates: Value error, label 'Defect' is a type label of bug too",
        ),
        (
            "duplicates:\n  label: bug\n",
            "line 1: duplicates: Value error, label 'bug' is a type label of bug too",
        ),
        (
            "labels:\n  ready: {name: Triaged}\nduplicates: {label: triaged}\n",
            "line 3: duplicates: Value error, label 'triaged' is the gate label labels.ready too",
        ),
        ('duplicates:\n  label: "dup\\u202e"\n', "line 2: duplicates.label: Value error, a label"),
        ("duplicates:\n  label: 'a,b'\n", "line 2: duplicates.label: String should match"),
        (
            "duplicates:\n  statement: {threshold: 0.7, right: 9, made: 8}\n",
            "line 2: duplicates.statement: Value error, right cannot exceed made",
        ),
        (
            "duplicates:\n  statement: {threshold: 1.5, right: 1, made: 1}\n",
            "line 2: duplicates.statement.threshold: Input should be less than or equal to 1",
        ),
        (
            "duplicates:\n  statement: {threshold: 0.7, right: 0}\n",
            "statement.made: Field required",
        ),
        ("skip: {labels: [a}\n", "not valid YAML at line 1"),
        ("- a\n- b\n", "line 1: the file must be a mapping"),
    ],
)
def test_a_broken_file_names_the_key_and_its_line(text: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_repo_file(text)
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(f"{REPO_FILE_PATH}: ")
    assert named in str(caught.value)


# --- title patterns: RE2, linear in the title ----------------------------------------------
CATASTROPHIC = {"^(a+)+$": "", "(a|a)*b": "b", "(a|aa)+$": "", "^(a*)*$": "", "(a+a+)+c": "c",
                "^(\\w+\\s?)*$": ""}  # fmt: skip
"""Patterns that backtrack exponentially in Python's ``re`` on a run of ``a`` that then fails,
each with what ends a run of ``a`` it matches."""


def _skips(pattern: str, title: str) -> bool:
    rules = SkipRules(titles=[pattern])
    return rules.reason(title=title, labels=[], author=None, author_type=None) is not None


@pytest.mark.parametrize(("pattern", "ending"), CATASTROPHIC.items())
@pytest.mark.parametrize("length", [30, 5000])
def test_a_catastrophic_pattern_ends_on_a_long_attacker_title(
    pattern: str, ending: str, length: int
) -> None:
    """Python's ``re`` takes minutes on 30 characters of these (doubling per character); the
    gate answers, and answers right."""
    assert not _skips(pattern, "a" * length + "!")
    assert _skips(pattern, "a" * length + ending)


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from([*CATASTROPHIC, "^\\[WIP\\]", "(?i)draft", "b{2,3}!"]),
       title=st.text(alphabet="ab c!WIP[]", max_size=14))  # fmt: skip
def test_title_patterns_match_as_pythons_re_does_where_it_ends(pattern: str, title: str) -> None:
    """RE2 gives the same answer as Python's ``re`` on titles short enough for ``re``."""
    assert _skips(pattern, title) == bool(re.search(pattern, title))


def test_a_title_with_a_lone_surrogate_is_searched() -> None:
    assert _skips("WIP", "\ud800 WIP")  # json.loads makes one from "\\ud800" in a payload


UNSUPPORTED = [
    ("(a)\\1", "invalid escape sequence"),  # a backreference
    ("(?P<x>a)(?P=x)", "invalid perl operator"),  # a named backreference
    ("(?=wip)", "invalid perl operator"),  # lookahead
    ("(?!wip)", "invalid perl operator"),
    ("(?<=x)wip", "invalid perl operator"),  # lookbehind
    ("(?<!x)wip", "invalid perl operator"),
    ("(?>wip)", "invalid perl operator"),  # an atomic group (Python 3.11)
    ("wip\\Z", "invalid escape sequence"),  # RE2 spells it \\z
    ("(unclosed", "missing )"),
]


@pytest.mark.parametrize(("pattern", "why"), UNSUPPORTED)
def test_a_pattern_re2_cannot_run_exits_2_naming_key_and_line(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, pattern: str, why: str
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = (
        f"skip:\n  titles:\n    - '^\\[WIP\\]'\n    - '{pattern}'\n"
    )
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, _issue(SHORT_BODY))),
        "GITHUB_TOKEN": "t",
        "TRIAGE_DB": str(tmp_path / "store" / "triage.db"),
    }
    result = CliRunner().invoke(main, ["run"], env=env)
    assert result.exit_code == 2, result.output
    assert f"{REPO_FILE_PATH}: line 4: skip.titles.1: Value error, " in result.stderr
    assert "is not a regular expression RE2 can run" in result.stderr
    assert why in result.stderr
    assert github.writes == []
    assert model.history == []


# --- a broken file is a config error, never a crash -----------------------------------------
NESTED_GROUPS = "(" * 1200 + "a" + ")" * 1200


@pytest.mark.parametrize(
    "text",
    [
        "[" * 20_000,  # PyYAML composes nested collections recursively: RecursionError
        "{a: " * 15_000,
        "- " * 20_000,
        "skip:\n  titles: [" + "[" * 20_000 + "]\n",
    ],
)
def test_a_file_nested_too_deeply_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(REPO_FILE_PATH)}: nested too deeply"):
        parse_repo_file(text)


@pytest.mark.parametrize(
    ("pattern", "title", "skips"),
    [
        ("a{4294967296}", "a" * 5000, False),  # re: OverflowError; RE2 reads the brace as text
        (NESTED_GROUPS, "issue: a", True),  # re: RecursionError
    ],
)
def test_patterns_that_crashed_pythons_re_are_run_by_re2(
    pattern: str, title: str, skips: bool
) -> None:
    parsed = parse_repo_file(f"skip:\n  titles: ['{pattern}']\n")
    assert parsed.skip.titles == [pattern]
    assert _skips(pattern, title) is skips


def _gate_run(tmp_path: Path, extra_env: dict[str, str] | None = None) -> Any:
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, _issue(SHORT_BODY))),
        "GITHUB_TOKEN": "t",
        "TRIAGE_DB": str(tmp_path / "store" / "triage.db"),
        **(extra_env or {}),
    }
    return CliRunner().invoke(main, ["run"], env=env)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[" * 20_000, "nested too deeply"),
        ("skip:\n  titles: ['(?<=x)']\n", "line 2: skip.titles.0: Value error"),
        ("x" * 70_000, "longer than 64000 characters"),
    ],
)
def test_a_broken_file_in_the_repository_exits_2_never_1(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, text: str, named: str
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = text
    result = _gate_run(tmp_path)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"triage-bot: error: {REPO_FILE_PATH}: ")
    assert named in result.stderr
    assert github.writes == []
    assert model.history == []


def test_a_file_over_1_mb_exits_2_through_the_github_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub's contents API answers ``encoding: none`` and no content for a file over 1 MB
    (cassettes/github_repo_file_over_1mb.yaml); PyGithub's ``decoded_content`` asserts on it."""
    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, _issue(SHORT_BODY))),
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": "http://127.0.0.1:11434",
        "TRIAGE_DB": str(tmp_path / "triage.db"),
    }
    captured: list[Any] = []
    with cassette("github_repo_file_over_1mb", captured) as cass:
        result = CliRunner().invoke(main, ["run"], env=env)
        assert cass.all_played
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"triage-bot: error: {REPO_FILE_PATH}: 1048577 bytes, more than GitHub's contents API "
        "serves (1 MB): the bot reads no file that large\n"
    )
    assert len(captured) == 1  # the file's read, nothing after it


def _local_file_read(path: Path) -> BaseException | None:
    """What reading ``path`` as ``--repo-file`` raised, in a thread given 10 s (a FIFO still
    blocking then is opened for writing and closed, and the test fails)."""
    outcome: list[BaseException | None] = []
    settings_ = Settings(repo_file_path=path)

    def read() -> None:
        try:
            runner.job_context(settings_).with_repository_file("o/r", "master")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"--repo-file {path} still being read after 10 s")
    return outcome[0]


def _fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "triage-bot.yml")
    return tmp_path / "triage-bot.yml"


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (_fifo, "is a FIFO, not a regular file"),
        (lambda tmp: Path("/dev/zero"), "is a character device, not a regular file"),
        (lambda tmp: tmp, "is a directory, not a regular file"),
        (lambda tmp: _written(tmp, b"#" * 300_000), "longer than 64000 characters"),
        (lambda tmp: _written(tmp, b"skip: \xff\n"), "not UTF-8"),
    ],
)
def test_a_local_repo_file_that_is_no_file_or_too_long_is_a_config_error(
    tmp_path: Path, make: Any, named: str
) -> None:
    path = make(tmp_path)
    error = _local_file_read(path)
    assert isinstance(error, ConfigError)
    assert str(error).startswith(f"--repo-file {path}:")
    assert named in str(error)
    assert "0xff" not in str(error)  # the bytes are not shown


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("skip:\n  label: [x]\n", "line 2: skip.label: "),
        ("skip: [\n", "not valid YAML"),
        ("- a list\n", "line 1: the file must be a mapping of keys"),
        ("skip:\n  titles: ['(?<=a)b']\n", "skip.titles"),
    ],
)
def test_a_broken_local_repo_file_is_named_as_the_operators_file(
    tmp_path: Path, text: str, problem: str
) -> None:
    """The error names the file the operator is trying (``--repo-file PATH``), not the
    repository's ``.github/triage-bot.yml``, which was never read."""
    path = _written(tmp_path, text.encode())
    error = _local_file_read(path)
    assert isinstance(error, ConfigError)
    assert str(error).startswith(f"--repo-file {path}: "), error
    assert problem in str(error)
    assert REPO_FILE_PATH not in str(error)


def _written(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "triage-bot.yml"
    path.write_bytes(data)
    return path


_KEYS = ["elements", "labels", "author_comment", "skip", "audit", "models", "titles", "name",
         "definition", "required_for", "ready", "color", "intro", "enabled", "max_segments",
         "skip_globs", "validator", "bots", "other"]  # fmt: skip
_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
    | st.sampled_from(["a{4294967296}", NESTED_GROUPS, "^(a+)+$", "(?=x)", "\ud800", "[", "*"])
)  # fmt: skip
_YAML_TEXT = st.recursive(
    _LEAVES,
    lambda kids: st.lists(kids, max_size=4)
    | st.dictionaries(st.sampled_from(_KEYS), kids, max_size=4),
    max_leaves=25,
).map(lambda value: yaml.safe_dump(value, allow_unicode=True))  # fmt: skip
_NESTED = st.builds(
    lambda n, opener, tail: opener * n + tail,
    st.integers(0, 30_000), st.sampled_from(["[", "{", "- ", "{a: ", "? "]), st.text(max_size=20),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=2000), _YAML_TEXT, _NESTED))
def test_any_text_as_the_file_is_parsed_or_a_config_error(text: str) -> None:
    """Whatever the repository holds: the defaults and rules it sets, or a config error (exit
    2) naming the file, never another exception; and the rules parsed run on any title."""
    try:
        parsed = parse_repo_file(text)
    except ConfigError as exc:
        message = str(exc)
    else:
        parsed.settings()
        title = "a" * 300 + "!\ud800"
        parsed.skip.reason(title=title, labels=["x"], author="u", author_type="Bot")
        return
    assert message.startswith(f"{REPO_FILE_PATH}: ")


# --- precedence -------------------------------------------------------------------------------
def test_flag_beats_action_input_beats_file_beats_default() -> None:
    file = parse_repo_file("models: {validator: from-file}\naudit: {max_segments: 3}\n")
    assert Settings.resolve({}, {}).with_repository_file(file).validator_model == "from-file"
    assert Settings.resolve({}, {}).max_segments == 8  # the default, without the file
    assert Settings.resolve({}, {}).with_repository_file(file).max_segments == 3
    by_input = Settings.resolve({}, {"INPUT_VALIDATOR-MODEL": "from-input"})
    assert by_input.with_repository_file(file).validator_model == "from-input"
    by_flag = Settings.resolve({"validator_model": "from-flag"}, {"INPUT_VALIDATOR-MODEL": "x"})
    assert by_flag.with_repository_file(file).validator_model == "from-flag"
    by_variable = Settings.resolve({}, {"TRIAGE_MAX_SEGMENTS": "5"})
    assert by_variable.with_repository_file(file).max_segments == 5


# --- through the runner -----------------------------------------------------------------------
def test_the_file_is_read_once_from_the_default_branch_and_sets_the_run(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = "author_comment: {enabled: false}\n"
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, _issue(SHORT_BODY))
    assert report.outputs["label"] == "needs-refinement"
    assert github.reads.count(CONFIG_READ) == 1
    assert github.bot_comments(1) == []  # the author comment is off by file
    assert not any(r[0] == "find_bot_comment" for r in github.reads)


def test_the_intro_line_opens_the_author_comment_neutralised(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    intro = "See CONTRIBUTING.md, @acme/maintainers <img src=x> [here](http://evil.example)"
    github.repo_files[("master", REPO_FILE_PATH)] = f"author_comment:\n  intro: '{intro}'\n"
    model.enqueue(NEEDS_REPLY)
    _run(tmp_path, _issue(SHORT_BODY))
    (comment,) = github.bot_comments(1)
    shown = render(comment.body)
    assert "@\u200bacme/maintainers" in shown.text  # shown, but not a mention
    assert intro in shown.text.replace("\u200b", "")
    assert "a" not in shown.tags  # no link, no mention
    assert "img" not in shown.tags
    assert "href" not in shown.attributes


RENAMED = """\
labels:
  ready: {name: 'status: ready', color: 00FF00}
  needs_refinement: {name: 'status: needs info', description: 'Tell us more, please'}
  validator_error: {name: 'status: bot error'}
"""


def test_labels_renamed_end_to_end(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = RENAMED
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, _issue(SHORT_BODY))
    assert report.outputs["label"] == "status: needs info"
    assert github.issue_labels[1] == ["status: needs info"]
    assert github.label_looks["status: needs info"] == ("fbca04", "Tell us more, please")
    (comment,) = github.bot_comments(1)
    assert "labelled `status: needs info`" in comment.body
    # the author edits the issue: VALID swaps the renamed labels and edits the comment
    payload = _issue(COMPLETE_BODY, labels=[{"name": "status: needs info"}])
    payload["action"] = "edited"
    payload["changes"] = {"body": {"from": SHORT_BODY}}
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, payload)
    assert report.outputs["label"] == "status: ready"
    assert github.issue_labels[1] == ["status: ready"]
    assert github.label_looks["status: ready"] == ("00ff00", READY.description)
    assert "labelled `status: ready`" in github.bot_comments(1)[0].body
    # a fault gets the renamed error label
    payload["issue"]["body"] = COMPLETE_BODY + " More."
    payload["issue"]["labels"] = [{"name": "status: ready"}]
    model.enqueue(ModelUnavailable("down"))
    assert _run(tmp_path, payload).outputs["label"] == "status: bot error"
    assert github.issue_labels[1] == ["status: bot error"]


def test_two_gate_labels_with_one_name_fail_the_run(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = "labels:\n  ready: {name: Needs-Refinement}\n"
    model.enqueue(VALID_REPLY)
    with pytest.raises(ConfigError, match="three different names"):
        _run(tmp_path, _issue())
    assert github.writes == []


def test_a_pr_whose_head_changes_the_file_does_not_change_the_run(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    payload = load_webhook("pull_request.opened.0")
    pr = payload["pull_request"]
    number, head = pr["number"], pr["head"]["sha"]
    pr.update(draft=False, state="open")
    github.files[number] = []  # nothing to audit: the test is about the configuration read
    github.repo_files[(head, REPO_FILE_PATH)] = "this: is: [broken\n"  # the PR's own version
    github.repo_files[("master", REPO_FILE_PATH)] = "audit: {max_segments: 2}\n"
    report = _run(tmp_path, payload, event="pull_request_target")
    assert github.reads[0] == CONFIG_READ
    assert not any(head in " ".join(read) for read in github.reads)
    assert report.outputs == {"audits-accepted": "0", "audits-rejected": "0"}


def test_a_broken_file_exits_2_naming_the_key_and_line_and_writes_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = "skip:\n  bots: true\n  labelz: [x]\n"
    model.enqueue(NEEDS_REPLY)
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, _issue(SHORT_BODY))),
        "GITHUB_TOKEN": "t",
        "TRIAGE_DB": str(tmp_path / "store" / "triage.db"),
        "GITHUB_OUTPUT": str(tmp_path / "outputs.txt"),
    }
    result = CliRunner().invoke(main, ["run"], env=env)
    assert result.exit_code == 2, result.output
    assert f"{REPO_FILE_PATH}: line 3: skip.labelz: Extra inputs" in result.stderr
    assert github.writes == []
    assert model.history == []  # judged nothing
    assert not (tmp_path / "store").exists()
    assert not (tmp_path / "outputs.txt").exists()


@pytest.mark.parametrize(
    ("issue", "reason"),
    [
        ({"labels": [{"name": "Question"}]}, "the issue has the label 'Question'"),
        ({"user": {"login": "dependabot-preview", "type": "User"}}, "author 'dependabot-preview'"),
        ({"user": {"login": "renovate[bot]", "type": "Bot"}}, "opened by a bot"),
        ({"title": "[WIP] half an idea"}, "the title matches '^\\\\[WIP\\\\]'"),
    ],
)
def test_skip_rules_skip_the_event_with_a_reason(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    issue: dict[str, Any],
    reason: str,
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = FULL
    report = _run(tmp_path, _issue(**issue))
    assert reason in report.text
    assert report.outputs.get("skipped") == "true"
    assert github.writes == []
    assert model.history == []


def test_an_issue_no_rule_matches_is_judged(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = FULL
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, _issue())
    assert report.outputs["label"] == "ready-for-dev"


def test_the_file_sets_the_validator_model(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = "models: {validator: 'qwen2.5-coder:7b'}\n"
    seen: list[str] = []

    def make(settings: Settings, role: str) -> FakeChatModel:
        seen.append(settings.validator_model)
        return model

    monkeypatch.setattr(runner, "make_chat_model", make)
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _issue(), ollama_host="http://127.0.0.1:11434")
    assert seen == ["qwen2.5-coder:7b"]


# --- through the PyGithub adapter on recorded traffic -----------------------------------------
def test_recorded_file_turns_the_author_comment_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    payload = _issue(load_webhook("issues.opened.18")["issue"]["body"])
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, payload)),
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": "http://127.0.0.1:11434",
        "TRIAGE_DB": str(tmp_path / "triage.db"),
    }
    captured: list[Any] = []
    with cassette("e2e_repo_file_author_comment_off", captured) as cass:
        result = CliRunner().invoke(main, ["run"], env=env)
        assert cass.all_played
    assert result.exit_code == 0, result.output
    github = [r for r in captured if "api.github.com" in r.uri]
    assert [r.method for r in github] == ["GET", "POST", "POST"]
    assert github[0].uri.endswith("/contents/.github/triage-bot.yml?ref=master")
    assert "needs-refinement" in json.loads(github[-1].body)  # no comment looked up or posted


def test_the_readme_example_is_a_valid_file() -> None:
    section = (ROOT / "README.md").read_text("utf-8").split("### Per-repository configuration")[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert example.startswith("# yaml-language-server: $schema=")
    assert parse_repo_file(example).labels.ready.name == "status: ready"


# --- the published schema ---------------------------------------------------------------------
def test_the_published_schema_is_current() -> None:
    published = json.loads((ROOT / "schema" / "triage-bot.schema.json").read_text("utf-8"))
    assert published == json_schema(), "run: python scripts/repo_file_schema.py"


def test_a_dry_run_without_a_token_reads_no_file_and_with_one_reads_it(github: FakeGitHub) -> None:
    """The README's first command is a dry run with no token, perhaps offline: it plans with
    the defaults. A dry run with a token reads the file as a real run would."""
    github.repo_files[("master", REPO_FILE_PATH)] = "models: {validator: from-file}\n"
    offline = Settings.resolve({"dry_run": True}, {})
    job = runner.job_context(offline).with_repository_file("o/r", "master")
    assert job.settings is offline
    assert github.reads.count(CONFIG_READ) == 0
    online = Settings.resolve({"dry_run": True}, {"GITHUB_TOKEN": "t"})
    read = runner.job_context(online).with_repository_file("o/r", "master").settings
    assert read.validator_model == "from-file"
    assert github.reads.count(CONFIG_READ) == 1


def test_the_duplicates_block_defaults_to_saying_nothing_and_reads_a_measured_statement() -> None:
    assert parse_repo_file("").duplicates.label is None
    assert parse_repo_file("").duplicates.statement is None
    text = (
        "duplicates:\n  label: possible-duplicate\n"
        "  statement: {threshold: 0.6, right: 9, made: 10}\n"
    )
    dup = parse_repo_file(text).duplicates
    assert dup.label == "possible-duplicate"
    assert dup.statement is not None
    assert (dup.statement.threshold, dup.statement.right, dup.statement.made) == (0.6, 9, 10)


@pytest.mark.parametrize("name", ["Ready-For-Dev", "needs-refinement", "validator-error"])
def test_a_duplicate_label_named_like_a_default_gate_label_is_refused(name: str) -> None:
    file = parse_repo_file(f"duplicates: {{label: {name}}}\n")
    with pytest.raises(ConfigError, match=r"duplicates\.label"):
        file_gate_labels(file)
    renamed = parse_repo_file(f"labels: {{ready: {{name: ok}}}}\nduplicates: {{label: {name}}}\n")
    if name.lower() == "ready-for-dev":  # renamed away: the name is free
        assert file_gate_labels(renamed).ready.name == "ok"


@pytest.mark.parametrize(
    "text",
    [
        "types:\n  labels:\n    bug: [Needs-Refinement]\n",
        "labels: {ready: {name: triaged}}\ntypes:\n  labels:\n    question: [help, triaged]\n",
    ],
)
def test_a_type_label_named_like_a_gate_label_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"types\.labels\.(bug|question): .* gate label"):
        file_gate_labels(parse_repo_file(text))


def test_a_gate_label_named_like_a_default_type_label_stands() -> None:
    """The common type names apply only where the file names none: a gate label renamed to
    one of them is the gate's (as before type labels existed)."""
    text = "labels: {needs_refinement: {name: question}}\n"
    assert file_gate_labels(parse_repo_file(text)).needs_refinement.name == "question"


def test_a_gate_label_renamed_away_frees_its_name_for_a_type() -> None:
    text = "labels: {ready: {name: ok}}\ntypes:\n  labels:\n    feature: [ready-for-dev]\n"
    assert file_gate_labels(parse_repo_file(text)).ready.name == "ok"
