"""``triage-bot calibrate`` refuses a policy its measurement cannot support (exit 2, nothing
written): a half under 30 items or 10 NEEDS_REFINEMENT, replies to another prompt, a tie on the
tune half, a choice the check half contradicts; ``--force`` writes it, each reason printed and
kept in the policy's ``chosen_on``. Every share it prints carries its 95% interval.

The sets are the project's eval items (``evals/issues.jsonl``) under new ids, each placed on
the half a test needs, with replies written for the tests: ``right`` gives the maintainers'
verdict quoting the title, ``wrong`` the other verdict, ``unquoted`` the right verdict with no
quote. On :func:`sound_set` the model's own verdict is the one best candidate on the tune half
(each guard lowers a VALID item there) and holds on the check half.
"""

from __future__ import annotations

import json
import re
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import main
from bot.config import Settings
from bot.evaluation import command
from bot.evaluation.calibrate import (
    MIN_HALF_ITEMS,
    MIN_HALF_NEEDS_REFINEMENT,
    calibrate,
    prompt_problems,
    set_problems,
)
from bot.evaluation.replies import ReplayModel, load_replies
from bot.evaluation.run import judge_items
from bot.evaluation.sets import EvalIssue, dev_half, load_jsonl
from bot.gate.policy import default_policy
from bot.gate.validator import make_validator
from bot.policy_file import GatePolicy, load_policy
from tests.support import ROOT, FakeChatModel
from tests.support.replies import reply

SOURCE = {i.id: i for i in load_jsonl(ROOT / "evals" / "issues.jsonl", EvalIssue)}
_FILLED = SOURCE["tpl-filled"]
SOURCE["tpl-one-empty"] = _FILLED.model_copy(
    update={"id": "tpl-one-empty", "body": _FILLED.body + "\n\n## Additional context\n"}
)  # accepted with one section left empty: the guard ``unfilled`` lowers it
CURRENT = make_validator(Settings(), FakeChatModel()).prompt_version
"""The validator prompt version runs send with the default settings."""
SHARE = r"(\d+% \(\d+ of \d+; 95% CI \d+–\d+%\)|– \(0 items\))"
"""A share as :class:`bot.shares.Share` prints it: count and 95% interval."""

Row = tuple[str, str]
"""A source item's id and the kind of reply it gets."""


def _answer(item: EvalIssue, kind: str) -> str | None:
    other = "VALID" if item.expected == "NEEDS_REFINEMENT" else "NEEDS_REFINEMENT"
    if kind == "error":
        return None
    verdict = other if kind == "wrong" else item.expected
    quote = "" if kind == "unquoted" else item.title
    return reply(verdict, "Judged from the whole issue.", problem=quote)


def half_rows(kind: str = "right", *, unquoted: str = "bug-docker") -> list[Row]:
    """Every source item once, each with a ``kind`` reply but ``unquoted``'s (``""``: none)."""
    return [(i, "unquoted" if i == unquoted else kind) for i in SOURCE]


def write_set(
    folder: Path, tune: list[Row], check: list[Row], *, prompt_version: str | None = CURRENT
) -> tuple[Path, Path]:
    """The issues and replies files: each row's source item under a new id on its half."""
    numbers = count()
    issues, replies = [], []
    for half, rows in (("tune", tune), ("check", check)):
        for source, kind in rows:
            new_id = next(i for n in numbers if dev_half(i := f"{source}-{n}") == half)
            item = SOURCE[source].model_copy(update={"id": new_id})
            issues.append(item.model_dump_json())
            answer = _answer(item, kind)
            line: dict[str, Any] = {"id": new_id, "reply": answer, "model": "m-under-test"}
            if answer is None:
                line["error"] = "unparseable"
            if prompt_version is not None:
                line["prompt_version"] = prompt_version
            replies.append(json.dumps(line))
    (folder / "issues.jsonl").write_text("".join(f"{x}\n" for x in issues), "utf-8")
    (folder / "replies.jsonl").write_text("".join(f"{x}\n" for x in replies), "utf-8")
    return folder / "issues.jsonl", folder / "replies.jsonl"


def sound_set(folder: Path, **kwargs: Any) -> tuple[Path, Path]:
    return write_set(folder, half_rows(), half_rows(), **kwargs)


def run(folder: Path, issues: Path, replies: Path | None, *extra: str) -> Result:
    args = ["calibrate", "--issues", str(issues), "--out", str(folder / "policy.json")]
    if replies is not None:
        args += ["--replies", str(replies)]
    return CliRunner().invoke(main, [*args, *extra])


def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(*_: Any) -> None:
        raise AssertionError("a model was built for a set the input already refuses")

    monkeypatch.setattr(command, "make_chat_model", make)


def _no_judging(monkeypatch: pytest.MonkeyPatch) -> None:
    def judge(*_: Any, **__: Any) -> None:
        raise AssertionError("the set was judged although the replies already refuse it")

    monkeypatch.setattr(command, "judge_items", judge)


def _refused(result: Result, folder: Path, *phrases: str) -> None:
    assert result.exit_code == 2, result.output
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert "--force writes it anyway" in result.stderr
    assert not (folder / "policy.json").exists()


def _forced(result: Result, folder: Path, *phrases: str) -> GatePolicy:
    """The policy ``--force`` wrote; each phrase is in a printed warning and in its chosen_on."""
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    policy = load_policy(folder / "policy.json")
    for phrase in phrases:
        assert any(phrase in line for line in warnings), result.stdout
        assert phrase in policy.chosen_on
    assert "Written with --force despite: (1) " in policy.chosen_on
    return policy


# --- a set that supports its choice --------------------------------------------------------------


def test_a_sound_set_is_written_with_no_warning(tmp_path: Path) -> None:
    issues, replies = sound_set(tmp_path)
    result = run(tmp_path, issues, replies)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stdout
    policy = load_policy(tmp_path / "policy.json")
    assert (policy.verdict_from, policy.guards) == ("model", ())
    assert "--force" not in policy.chosen_on


def test_every_share_printed_carries_its_interval(tmp_path: Path) -> None:
    """Each cell of the candidates' table that is a share, and the choice's check-half figure
    on the ``chosen:`` line and in ``chosen_on``, is ``P% (K of N; 95% CI L–H%)``."""
    issues, replies = sound_set(tmp_path)
    result = run(tmp_path, issues, replies)
    assert result.exit_code == 0, result.output
    rows = [
        line
        for line in result.stdout.splitlines()
        if re.match(r"\| [a-z+]+ \| (tune|check) \| ", line)
    ]
    assert len(rows) == 2 * 15  # every candidate, on both halves
    for row in rows:
        _name, half, *shares, raised, _ = [cell.strip() for cell in row.split("|")[1:]]
        assert half in ("tune", "check")
        assert len(shares) == 4  # agreement, non-borderline, NR precision, NR recall
        assert all(re.fullmatch(SHARE, cell) for cell in shares), row
        assert raised.isdigit()
    chosen = next(line for line in result.stdout.splitlines() if line.startswith("chosen: "))
    assert re.search(f"on the check half its non-borderline agreement is {SHARE}$", chosen)
    policy = load_policy(tmp_path / "policy.json")
    assert re.search(f"its non-borderline agreement is {SHARE}$", policy.chosen_on)


# --- a half too small: refused before any model -------------------------------------------------


def _small(which: str) -> tuple[list[Row], list[Row]]:
    """A tune half one short of a bound (``items`` or ``needs``), and a sound check half."""
    rows = half_rows()
    needs = [r for r in rows if SOURCE[r[0]].expected == "NEEDS_REFINEMENT"]
    valid = [r for r in rows if SOURCE[r[0]].expected == "VALID"]
    if which == "items":
        tune = needs[:MIN_HALF_NEEDS_REFINEMENT] + valid
        return tune[: MIN_HALF_ITEMS - 1], rows
    return needs[: MIN_HALF_NEEDS_REFINEMENT - 1] + valid, rows


@pytest.mark.parametrize(("which", "shown"), [
    ("items", "the tune half holds 29 items (10 NEEDS_REFINEMENT)"),
    ("needs", "the tune half holds 33 items (9 NEEDS_REFINEMENT)"),
])  # fmt: skip
def test_a_small_half_is_refused_before_the_model_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str, shown: str
) -> None:
    _no_model(monkeypatch)
    issues, _ = write_set(tmp_path, *_small(which))
    result = run(tmp_path, issues, None)
    _refused(result, tmp_path, shown, "under 30 items or 10 NEEDS_REFINEMENT")
    assert "check half" not in result.stderr  # the sound half is not named


def test_a_small_half_is_written_with_force(tmp_path: Path) -> None:
    issues, replies = write_set(tmp_path, *_small("items"))
    result = run(tmp_path, issues, replies, "--force")
    _forced(result, tmp_path, "the tune half holds 29 items (10 NEEDS_REFINEMENT)")


def _items(half: str, needs: int, valid: int) -> list[EvalIssue]:
    ids = (i for n in count() if dev_half(i := f"{half}-{n}") == half)
    return [
        EvalIssue(id=next(ids), kind="bug", title="t", body="b", expected=expected, rationale="r")
        for expected in ["NEEDS_REFINEMENT"] * needs + ["VALID"] * valid
    ]


def test_the_bounds_hold_on_each_half() -> None:
    """Exactly 30 items with 10 NEEDS_REFINEMENT a half is enough; one fewer of either, on
    either half, names that half."""
    assert set_problems(_items("tune", 10, 20) + _items("check", 10, 20)) == []
    assert set_problems(_items("tune", 30, 0) + _items("check", 10, 20)) == []
    cases = {
        "the tune half holds 29 items (10 NEEDS_REFINEMENT)": (_items("tune", 10, 19),
                                                                _items("check", 10, 20)),
        "the check half holds 30 items (9 NEEDS_REFINEMENT)": (_items("tune", 10, 20),
                                                                 _items("check", 9, 21)),
    }  # fmt: skip
    for shown, (tune, check) in cases.items():
        (problem,) = set_problems(tune + check)
        assert problem.startswith(shown)


# --- replies to another prompt: refused before judging -------------------------------------------


def test_replies_to_another_prompt_are_refused_before_judging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_judging(monkeypatch)
    issues, replies = sound_set(tmp_path, prompt_version="validator@0badc0de")
    result = run(tmp_path, issues, replies)
    _refused(result, tmp_path, f"the replies answer prompt validator@0badc0de, not {CURRENT}")


def test_replies_to_another_prompt_are_written_with_force(tmp_path: Path) -> None:
    issues, replies = sound_set(tmp_path, prompt_version="validator@0badc0de")
    result = run(tmp_path, issues, replies, "--force")
    policy = _forced(result, tmp_path, "the replies answer prompt validator@0badc0de")
    assert policy.measured is not None
    assert policy.measured.prompt_version == "validator@0badc0de"  # it never holds at run time


@pytest.mark.parametrize("version", [None, CURRENT, "validator@bc6f2888"])
def test_replies_to_this_prompt_are_not_refused(tmp_path: Path, version: str | None) -> None:
    """The current version, one that names the same messages under an earlier rule
    (:data:`bot.prompts.RENAMED`), or none named (a file written elsewhere)."""
    issues, replies = sound_set(tmp_path, prompt_version=version)
    result = run(tmp_path, issues, replies)
    assert result.exit_code == 0, result.output


def test_a_file_that_mixes_prompts_is_refused() -> None:
    assert prompt_problems([CURRENT], CURRENT) == []
    (problem,) = prompt_problems([CURRENT, "validator@0badc0de"], CURRENT)
    assert problem.startswith("the replies answer prompt validator@0badc0de, not ")


# --- a tie on the tune half: said, and kept with the policy ---------------------------------------


def test_a_tie_on_the_tune_half_is_said_and_kept_in_the_policy(tmp_path: Path) -> None:
    """With every reply quoting the issue, ``unbacked`` never fires: ``model`` and
    ``model+unbacked`` decide alike, a harmless tie: written, with the tie-break named."""
    issues, replies = write_set(tmp_path, half_rows(unquoted=""), half_rows())
    result = run(tmp_path, issues, replies)
    assert result.exit_code == 0, result.output
    note = "2 candidates tie for the best on the tune half (non-borderline agreement 100% "
    assert f"note: {note}" in result.stdout
    assert "model is written by the tie-break" in result.stdout
    policy = load_policy(tmp_path / "policy.json")
    assert note in policy.chosen_on
    assert (policy.verdict_from, policy.guards) == ("model", ())


# --- the check half contradicts the choice: refused before writing ------------------------------


def test_a_choice_the_check_half_contradicts_is_refused(tmp_path: Path) -> None:
    """The model is right on every tune item and wrong on every check item: its own verdict
    is chosen, and every guard policy does far better on the check half."""
    issues, replies = write_set(tmp_path, half_rows(), half_rows("wrong", unquoted=""))
    result = run(tmp_path, issues, replies)
    _refused(
        result, tmp_path,
        "on the check half, model's non-borderline agreement 0% (0 of ",
        "more than its interval's half-width (",
    )  # fmt: skip
    assert re.search(r"is below guards\+[a-z+]+'s \d+% .* by \d+ points", result.stderr)


def test_a_contradicted_choice_is_written_with_force(tmp_path: Path) -> None:
    issues, replies = write_set(tmp_path, half_rows(), half_rows("wrong", unquoted=""))
    result = run(tmp_path, issues, replies, "--force")
    _forced(result, tmp_path, "on the check half, model's non-borderline agreement 0%")


def test_a_check_half_within_the_interval_is_not_refused(tmp_path: Path) -> None:
    """Two wrong check items lower the choice by less than its interval's half-width."""
    check = half_rows()
    check[0], check[11] = (check[0][0], "wrong"), (check[11][0], "wrong")
    issues, replies = write_set(tmp_path, half_rows(), check)
    result = run(tmp_path, issues, replies)
    assert result.exit_code == 0, result.output


# --- every problem at once still fits chosen_on ---------------------------------------------------


def test_every_warning_at_once_fits_the_policy_file(tmp_path: Path) -> None:
    """A 15-way tie (every tune item a validator-error), a check half that contradicts the
    choice, a small set, replies to several other prompts and the longest set name: the
    policy still validates (``chosen_on`` holds at most 2,000 characters)."""
    sources = [s for s in SOURCE if SOURCE[s].expected == "NEEDS_REFINEMENT"][:5]
    tune = [(s, "error") for s in sources]
    check = [(s, "wrong") for s in SOURCE if s.startswith(("vague-", "q-", "tpl-"))]
    issues, replies = write_set(tmp_path, tune, check)
    items = load_jsonl(issues, EvalIssue)
    replay = ReplayModel(load_replies(replies))
    validator = make_validator(Settings(), replay)
    judged = judge_items(validator, items, replay=replay)
    versions = [f"validator@{n:08x}" for n in range(9)]
    early = set_problems(items) + prompt_problems(versions, CURRENT)
    result = calibrate(judged, default_policy(), name="x", model="m" * 200,
                       prompt_version=CURRENT, labelled_set="s" * 300, force=True,
                       warnings=early)  # fmt: skip
    assert len(result.warnings) == 3
    assert result.note is not None
    assert result.note.startswith("15 candidates tie for the best on the tune half")
    assert "on the check half, model's " in result.warnings[2]
    assert len(result.policy.chosen_on) <= 2000
    GatePolicy.model_validate_json(result.policy.model_dump_json())


# --- the hard refusal -----------------------------------------------------------------------


def test_a_tune_half_with_no_needs_refinement_is_refused_even_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_model(monkeypatch)
    valid = [r for r in half_rows() if SOURCE[r[0]].expected == "VALID"]
    issues, replies = write_set(tmp_path, valid * 2, half_rows())
    for given in (None, replies):
        result = run(tmp_path, issues, given, "--force")
        assert result.exit_code == 2, result.output
        assert "holds no NEEDS_REFINEMENT item" in result.stderr
        assert not (tmp_path / "policy.json").exists()
