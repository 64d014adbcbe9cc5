"""A repository's own checklist elements (with their definition and the
issue kinds that require them).

Units: which elements an issue requires (:class:`bot.gate.evidence.Element`), the rule's
"required" step (:func:`bot.gate.policy.decide`), the prompt and its version
(:func:`bot.gate.validator.system_prompt`), the validator's options
(:func:`bot.gate.validator.make_validator`). Through the runner with the stateful fake GitHub: a
file that adds a ``version`` element to bug reports sends the model a schema naming it, labels a bug
report without a version needs-refinement with the definition in the author comment, leaves a
feature request alone, and judges again after the file's criteria change.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import runner
from bot.checklist import ELEMENTS, RESERVED_KEYS, Element, checklist
from bot.cli import main
from bot.config import VALIDATOR_OPTIONS, Settings
from bot.errors import ConfigError
from bot.gate.evidence import gather_evidence
from bot.gate.facts import issue_facts
from bot.gate.issue_text import prepare_issue
from bot.gate.policy import decide
from bot.gate.validator import (
    NUM_PREDICT_CAP,
    Validator,
    checklist_of,
    make_validator,
    system_prompt,
)
from bot.history.store import Store
from bot.repo_file import REPO_FILE_PATH, parse_repo_file
from bot.run_report import RunReport
from tests.support import GUARDS, ROOT, FakeChatModel, guards_policy, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY, reply

VERSION_FILE = """\
elements:
  - name: version
    definition: the version of the tool you ran (e.g. 2.3.1)
    required_for: [bug]
"""

VERSION = Element("version", "the words giving the version", "the version", ("bug",))


def with_policy(text: str) -> str:
    """A repository file's text with a ``gate.policy`` measured for the fake model and the
    prompt this file's checklist makes: its elements change the prompt, and a policy measured
    with another prompt does not hold (no author comment) until it is calibrated again."""
    settings = replace(Settings(), repo_file=parse_repo_file(text))
    version = system_prompt(checklist_of(settings))[1]
    policy = guards_policy(prompt_version=version).model_dump(mode="json", exclude_none=True)
    return text + "gate:\n  policy: " + json.dumps(policy) + "\n"


PROBLEM = "README.md says to comitt your changes"


def _valid_reply(version: str | None = None) -> str:
    """A VALID reply quoting the problem; with ``version``, in the shape of :data:`VERSION_FILE`."""
    extra = {} if version is None else {"version": version}
    return reply("VALID", "The wording and the fix are given.", problem=PROBLEM, **extra)


def _issue(body: str, labels: list[str], action: str = "opened") -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")  # repository.default_branch: master
    payload["action"] = action
    payload["issue"].update(body=body, labels=[{"name": n} for n in labels])
    if action == "edited":
        payload["changes"] = {"body": {"from": "an earlier body"}}
    return payload


def _run(tmp_path: Path, payload: dict[str, Any], **kw: Any) -> RunReport:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
    )
    return runner.run_event(replace(base, **kw))


# --- units ------------------------------------------------------------------------------------
def test_an_element_is_required_by_the_kinds_it_names_or_by_every_issue() -> None:
    assert VERSION.required(frozenset({"bug"}))
    assert not VERSION.required(frozenset({"enhancement"}))
    every = Element("os", "ask", "the OS", ("*",))
    assert every.required(frozenset())
    assert not ELEMENTS[0].required(frozenset({"bug"}))  # the bot's own: weighed by the rule
    assert ELEMENTS[0].applies(frozenset())
    assert not VERSION.applies(frozenset({"question"}))
    assert Element("v", "a", "m", ("Bug",)).required(frozenset({"bug"}))  # case-insensitive


def test_a_checklist_key_is_used_once() -> None:
    assert checklist((VERSION,)) == (*ELEMENTS, VERSION)
    for clash in ("trigger", "reason", "verdict"):
        with pytest.raises(ValueError, match="unique"):
            checklist((replace(VERSION, key=clash),))
    with pytest.raises(ValueError, match="unique"):
        checklist((VERSION, VERSION))
    for key in RESERVED_KEYS:  # the file refuses the names the checklist does
        with pytest.raises(ConfigError, match="the bot's own"):
            parse_repo_file(f"elements:\n  - {{name: {key}, definition: anything at all}}\n")


def _judged(labels: list[str], version: str) -> Any:
    issue = prepare_issue("Spelling error", COMPLETE_BODY + " Seen on 2.3.1.", max_body_chars=6000)
    quotes = {"problem": PROBLEM, "trigger": "", "expected": "", "version": version}
    evidence = gather_evidence(quotes, issue, elements=checklist((VERSION,)), labels=labels)
    return decide(issue_facts(issue.title, issue.author_body), evidence, "VALID", GUARDS), evidence


def test_a_required_element_without_a_found_quote_makes_the_issue_need_refinement() -> None:
    ruling, evidence = _judged(["bug"], "")
    assert (ruling.verdict, ruling.rule) == ("NEEDS_REFINEMENT", "required")
    assert [e.key for e in evidence.missing] == ["trigger", "expected", "version"]
    assert "the version" in ruling.reason
    ruling, _ = _judged(["bug"], "on 2.4.0")  # a quote that is not in the issue is no evidence
    assert ruling.rule == "required"
    ruling, evidence = _judged(["bug"], "Seen on 2.3.1")
    assert (ruling.verdict, ruling.rule) == ("VALID", "guards")
    assert "version (“Seen on 2.3.1”)" in ruling.reason
    ruling, evidence = _judged(["enhancement"], "")  # not a bug: not required, not asked for
    assert ruling.verdict == "VALID"
    assert [e.key for e in evidence.missing] == ["trigger", "expected"]


def test_a_repositorys_element_is_found_from_one_word_the_bots_own_are_not() -> None:
    """A version is one word ("2.3.1"); "Slow" as the problem names a topic and states
    nothing (the rule for the bot's own elements stays)."""
    issue = prepare_issue("Slow", "Export is slow on 2.3.1. " + COMPLETE_BODY, max_body_chars=6000)
    elements = checklist((replace(VERSION, one_word=True),))
    quotes = {"problem": "Slow", "trigger": "", "expected": "", "version": "2.3.1"}
    found = gather_evidence(quotes, issue, elements=elements, labels=["bug"]).found
    assert found == {"version"}
    assert not gather_evidence(quotes, issue, elements=checklist((VERSION,))).found
    quotes["version"] = "2.4.0"  # one word that is not in the issue is still no evidence
    assert not gather_evidence(quotes, issue, elements=elements).found


def test_the_prompt_names_the_repositorys_elements_and_its_version_covers_them() -> None:
    text, version = system_prompt(checklist((VERSION,)))
    assert "- version: the words giving the version." in text
    assert '"version":{"type":"string"}' in text  # in the reply schema too
    default_text, default_version = system_prompt()
    assert version != default_version
    assert "version" not in default_text
    # what only the author sees or which kinds require it changes the version as well
    for changed in (replace(VERSION, missing="another"), replace(VERSION, required_for=("*",))):
        assert system_prompt(checklist((changed,)))[1] not in (version, default_version)
    assert system_prompt(ELEMENTS) == (default_text, default_version)


def test_num_predict_grows_per_element_and_stays_within_the_cap() -> None:
    model = FakeChatModel()
    base = Settings()
    assert make_validator(base, model)._options == VALIDATOR_OPTIONS
    one = replace(base, repo_file=parse_repo_file(VERSION_FILE))
    assert make_validator(one, model)._options.num_predict == VALIDATOR_OPTIONS.num_predict + 15
    three = "elements:\n" + "".join(
        f"  - {{name: e{i}, definition: thing number {i}}}\n" for i in range(3)
    )
    many = replace(base, repo_file=parse_repo_file(three))
    assert make_validator(many, model)._options.num_predict == NUM_PREDICT_CAP
    assert [e.key for e in checklist_of(many)][3:] == ["e0", "e1", "e2"]
    assert all(e.required_for == ("*",) and e.one_word for e in checklist_of(many)[3:])


# --- through the runner -----------------------------------------------------------------------
def test_a_bug_report_without_a_version_needs_refinement_and_is_told_so(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = with_policy(VERSION_FILE)
    model.enqueue(_valid_reply(version=""))
    report = _run(tmp_path, _issue(COMPLETE_BODY, ["bug"]))
    assert report.outputs["label"] == "needs-refinement"
    assert "test-guards" in report.text  # the repository file's policy decided
    sent = model.history[0]
    assert list(sent["schema"]["properties"])[3] == "version"
    assert "- version: the words giving the version of the tool you ran (e.g. 2.3.1)." in (
        sent["messages"][0].content
    )
    assert sent["options"].num_predict == VALIDATOR_OPTIONS.num_predict + 15
    (comment,) = github.bot_comments(1)
    shown = render(comment.body).text
    assert "version — the version of the tool you ran (e.g. 2.3.1)" in shown
    assert "trigger" in shown
    assert "problem" not in shown
    store = Store(tmp_path / "triage.db", read_only=True)
    row = store.last_gate("Codertocat/Hello-World", 1)
    store.close()
    assert row is not None
    assert row["prompt_version"] == Validator(
        model, VALIDATOR_OPTIONS, max_body_chars=6000, elements=checklist_of(
            replace(Settings(), repo_file=parse_repo_file(VERSION_FILE)))
    ).prompt_version != system_prompt()[1]  # fmt: skip

    # the author adds the version: the edit is judged VALID and the comment says ready
    edited = COMPLETE_BODY + " Seen on 2.3.1."
    model.enqueue(_valid_reply(version="Seen on 2.3.1"))
    report = _run(tmp_path, _issue(edited, ["bug", "needs-refinement"], action="edited"))
    assert report.outputs["label"] == "ready-for-dev"
    (comment,) = github.bot_comments(1)
    assert "ready for work" in comment.body


def test_a_feature_request_is_not_asked_for_a_version(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[("master", REPO_FILE_PATH)] = VERSION_FILE
    model.enqueue(_valid_reply(version=""))
    report = _run(tmp_path, _issue(COMPLETE_BODY, ["enhancement"]))
    assert report.outputs["label"] == "ready-for-dev"


def test_new_criteria_judge_an_unchanged_issue_again(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(_valid_reply())
    assert _run(tmp_path, _issue(COMPLETE_BODY, ["bug"])).outputs["label"] == "ready-for-dev"
    replay = _run(tmp_path, _issue(COMPLETE_BODY, ["bug", "ready-for-dev"], action="edited"))
    assert replay.outputs.get("skipped") == "true"  # same text, same criteria: no model call
    github.repo_files[("master", REPO_FILE_PATH)] = VERSION_FILE
    model.enqueue(_valid_reply(version=""))
    again = _run(tmp_path, _issue(COMPLETE_BODY, ["bug", "ready-for-dev"], action="edited"))
    assert again.outputs["label"] == "needs-refinement", again.text
    assert len(model.history) == 2


def test_a_definition_reaches_the_author_as_plain_text(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    definition = "the version, ask @acme/maintainers or see [docs](http://evil.example) **now**"
    github.repo_files[("master", REPO_FILE_PATH)] = with_policy(
        "elements:\n  - name: version\n    definition: " + json.dumps(definition) + "\n"
    )
    model.enqueue(_valid_reply(version=""))
    _run(tmp_path, _issue(COMPLETE_BODY, []))
    (comment,) = github.bot_comments(1)
    shown = render(comment.body)
    assert definition in shown.text.replace("\u200b", "")
    assert "a" not in shown.tags
    assert "href" not in shown.attributes


def test_the_walkthrough_file_is_valid_and_requires_a_version_of_bug_reports() -> None:
    parsed = parse_repo_file((ROOT / "examples" / "triage-bot.yml").read_text("utf-8"))
    (version,) = checklist_of(replace(Settings(), repo_file=parsed))[len(ELEMENTS) :]
    assert (version.key, version.required_for) == ("version", ("bug",))


def test_a_local_file_is_tried_in_a_dry_run_with_no_request(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """``--repo-file`` (the walkthrough in docs/repository-file.md): the operator's local file
    instead of the default branch's, with no GitHub request, so a dry run shows its effect
    offline."""
    local = tmp_path / "triage-bot.yml"
    local.write_text(with_policy(VERSION_FILE), "utf-8")
    github.repo_files[("master", REPO_FILE_PATH)] = "elements: [broken"  # never read
    model.enqueue(_valid_reply(version=""))
    event = write_payload(tmp_path, _issue(COMPLETE_BODY, ["bug"]))
    args = ["run", "--dry-run", "--event-name", "issues", "--repo-file", str(local),
            "--event-path", str(event)]  # fmt: skip
    env = {"GITHUB_TOKEN": "", "TRIAGE_DB": str(tmp_path / "triage.db")}
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert "label:    needs-refinement" in result.output
    assert r"**version** — the version of the tool you ran \(e\.g\. 2\.3\.1\)" in result.output
    assert github.reads == []
    assert github.writes == []
    local.write_text("elements:\n  - name: version\n", "utf-8")
    broken = CliRunner().invoke(main, args, env=env)
    assert broken.exit_code == 2
    assert "line 2: elements.0.definition: Field required" in broken.stderr
