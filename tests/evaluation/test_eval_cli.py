"""``triage-bot eval`` and ``triage-bot calibrate`` through the real CLI on recorded replies (no
model): every value read from the issues file, the replies file, an earlier report or a flag
reaches stdout inert, and bad input is a ConfigError (exit 2) that names it, with nothing lost.

The files are the first lines of the project's own eval set and of its recorded replies
(``evals/issues.jsonl``, ``evals/replies/qwen2.5-coder-1.5b.jsonl``), one field changed.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.evaluation import command
from bot.evaluation.replies import load_replies, replies_jsonl
from bot.evaluation.sets import EvalIssue, dev_half, load_jsonl
from bot.policy_file import load_policy
from tests.support import ROOT, FakeChatModel
from tests.support.profiles import FUZZ
from tests.test_neutralise import STDOUT_TEXT, runner_commands


def _rows(path: Path, ids: set[str] | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    return [r for r in rows if ids is None or r["id"] in ids]


def _few(rows: list[dict[str, Any]]) -> set[str]:
    """Three items calibrate can choose on: a tune NEEDS_REFINEMENT, a tune VALID, a check."""
    wanted = [("tune", "NEEDS_REFINEMENT"), ("tune", "VALID"), ("check", "VALID")]
    return {next(r["id"] for r in rows if (dev_half(r["id"]), r["expected"]) == w) for w in wanted}


ALL_ISSUE_ROWS = _rows(ROOT / "evals" / "issues.jsonl")
_IDS = _few(ALL_ISSUE_ROWS)
FORCE = "--force"
"""Calibrate refuses a half this small (tests/evaluation/test_calibrate.py); the tests here that are
about
the values and files it reads and writes, not the measurement, pass ``--force``."""
ISSUE_ROWS = _rows(ROOT / "evals" / "issues.jsonl", _IDS)
REPLY_ROWS = _rows(ROOT / "evals" / "replies" / "qwen2.5-coder-1.5b.jsonl", _IDS)

HOSTILE = [
    "\n::error::x",
    "\x1b[2J",
    "a\r::warning::y",
    "b\u2028::error::z",
    "c\x85::error::z",
    "##[error]w",
    "m " * 50 + "::error::folded",  # a name the YAML block would fold onto a `::` line
    "q" * 95 + " ::error::folded",
]
"""Values a file or flag may hold: line breaks of every kind before a workflow command, an
escape sequence, and long names with a space where a YAML emitter folds."""

VALUES = st.one_of(st.sampled_from(HOSTILE), STDOUT_TEXT.filter(bool))
WALL = re.compile(r"::(stop-commands::[0-9a-f]{32}|[0-9a-f]{32}::|add-mask::.*)$")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def set_files(
    folder: Path, *, issue: dict[str, Any] | None = None, reply: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """The issues and replies files, every row updated with ``issue`` / ``reply``."""
    issues = write_jsonl(folder / "issues.jsonl", [{**r, **(issue or {})} for r in ISSUE_ROWS])
    replies = write_jsonl(folder / "replies.jsonl", [{**r, **(reply or {})} for r in REPLY_ROWS])
    return issues, replies


def file_name(value: str) -> str:
    """``value`` as a file name Linux accepts."""
    kept = value.replace("/", "_").replace("\x00", "_").encode("utf-8", "replace")[:200]
    return "x" + kept.decode("utf-8", "ignore")  # never "." or ".."


def invoke(args: list[str]) -> Result:
    return CliRunner(env={"GITHUB_ACTIONS": "true"}).invoke(main, args)


def run_with(field: str, value: str, folder: Path) -> Result:
    """Run eval or calibrate with ``value`` in ``field``."""
    issue = {"kind": value} if field == "kind" else None
    reply = {field: value} if field in ("model", "prompt_version") else None
    issues, replies = set_files(folder, issue=issue, reply=reply)
    out = folder / "out.json"
    if field in ("kind", "compare-model", "eval-model", "eval-prompt_version"):
        if field.startswith("eval-"):
            issues, replies = set_files(folder, reply={field[5:]: value})
        args = ["eval", "--only", "gate", "--issues", str(issues), "--replies", str(replies),
                "--out", str(out)]  # fmt: skip
        if field == "compare-model":
            old = folder / "old.json"
            old.write_text(json.dumps({"model": value, "gate": {"agreement": 0.5}}), "utf-8")
            args += ["--compare", str(old)]
        return invoke(args)
    if field == "out":
        out = folder / file_name(value)
    if field == "issues-name":
        issues = issues.rename(folder / file_name(value))
    args = ["calibrate", "--issues", str(issues), "--replies", str(replies), "--out", str(out),
            "--yaml", FORCE]  # fmt: skip
    if field == "model-name":
        args += ["--model-name", value]
    return invoke(args)


FIELDS = ["kind", "compare-model", "eval-model", "eval-prompt_version", "model",
          "prompt_version", "model-name", "out", "issues-name"]  # fmt: skip


def assert_inert(result: Result) -> None:
    """No line but the bot's own wall and masks starts a workflow command; no escape byte."""
    forged = [line for line in runner_commands(result.output) if not WALL.match(line)]
    assert forged == [], result.output
    assert "\x1b" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_reaches_stdout_inert(tmp_path: Path, field: str, value: str) -> None:
    assert_inert(run_with(field, value, tmp_path))


@pytest.mark.parametrize("field", FIELDS)
@settings(FUZZ, max_examples=25)
@given(value=VALUES)
def test_any_value_reaches_stdout_inert(
    tmp_path_factory: pytest.TempPathFactory, field: str, value: str
) -> None:
    assert_inert(run_with(field, value, tmp_path_factory.mktemp("set")))


@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_eval_and_calibrate_print_inside_the_wall_in_actions(tmp_path: Path, command: str) -> None:
    """Under Actions the report is printed between ``::stop-commands::`` and its resume."""
    issues, replies = set_files(tmp_path)
    args = [command, "--issues", str(issues), "--replies", str(replies),
            "--out", str(tmp_path / "o.json")]  # fmt: skip
    if command == "eval":
        args[1:1] = ["--only", "gate"]
    else:
        args.append(FORCE)  # its warnings are printed inside the wall too
    result = invoke(args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (start,) = [n for n, line in enumerate(lines) if line.startswith("::stop-commands::")]
    token = lines[start].removeprefix("::stop-commands::")
    assert re.fullmatch("[0-9a-f]{32}", token)
    end = lines.index(f"::{token}::")
    report = [
        n for n, line in enumerate(lines) if line.startswith(("| ", "calibrate: ", "warning: "))
    ]
    assert report
    assert start < min(report)
    assert max(report) < end
    plain = CliRunner(env={"GITHUB_ACTIONS": None}).invoke(main, args)
    assert runner_commands(plain.stdout) == []


def test_the_policy_line_is_terminal_text(tmp_path: Path) -> None:
    """The eval's policy line shows the policy's name as written (no markdown escapes)."""
    issues, replies = set_files(tmp_path)
    args = ["eval", "--only", "gate", "--issues", str(issues), "--replies", str(replies),
            "--out", str(tmp_path / "o.json")]  # fmt: skip
    result = invoke(args)
    line = next(x for x in result.stdout.splitlines() if x.startswith("| gate policy |"))
    assert "\\" not in line
    assert "\u200b" not in line
    report = json.loads((tmp_path / "o.json").read_text("utf-8"))
    assert report["gate"]["policy"]["name"] in line


# --- values the replies file and the flags give the calibrated policy ---------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("prompt_version", "validator@7b2c93c7x", "prompt_version: String should match"),
        ("prompt_version", "validator@7B2C93C7", "prompt_version: String should match"),
        ("prompt_version", "", "prompt_version: String should match"),
        ("model", "", "model: String should have at least 1 character"),
        ("model", "m" * 201, "model: String should have at most 200 characters"),
    ],
)
@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_a_reply_line_the_policy_cannot_hold_is_named(
    tmp_path: Path, field: str, value: str, message: str, command: str
) -> None:
    """Exit 2 naming the replies file, its first line and the field; no policy written."""
    issues, replies = set_files(tmp_path, reply={field: value})
    out = tmp_path / "policy.json"
    args = [command, "--issues", str(issues), "--replies", str(replies), "--out", str(out)]
    if command == "eval":
        args[1:1] = ["--only", "gate"]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert f"{replies}:1: not a recorded reply: {message}" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("value", ["", "m" * 201, "x" * 1000])
def test_a_model_name_the_policy_cannot_hold_is_refused(tmp_path: Path, value: str) -> None:
    issues, replies = set_files(tmp_path)
    out = tmp_path / "policy.json"
    args = ["calibrate", "--issues", str(issues), "--replies", str(replies), "--out", str(out),
            "--model-name", value]  # fmt: skip
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert "--model-name: String should have at " in result.stderr
    assert not out.exists()


# --- bad input: a ConfigError (exit 2) naming it, before any model call -------------------------


def _no_model(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every model the command builds (none may be built when the input is refused)."""
    built: list[str] = []

    def make(_settings: Any, role: str) -> None:
        built.append(role)
        raise AssertionError("a model was built for a run that should have been refused")

    monkeypatch.setattr(command, "make_chat_model", make)
    return built


NOT_A_REPORT = ": not an eval report: "

COMPARE_BAD = [
    (b"not json", NOT_A_REPORT + "(top level): Invalid JSON"),
    (b"[1,2]", NOT_A_REPORT + "(top level): Input should be an object"),
    (b"\xff\xfe{}", ":1: not UTF-8"),
    (b"{}\n\n{\xff}", ":3: not UTF-8"),
    (b'{"gate":{"halves":{"tune":5}}}',
     NOT_A_REPORT + "gate.halves.tune: Input should be an object"),
    (b'{"gate":{"halves":{"tune":{"agreement":"high"}}}}',
     NOT_A_REPORT + "gate.halves.tune.agreement"),
    (b'{"gate":{"halves":{"ghp_x":5}}}', NOT_A_REPORT + "gate.halves.(a key): Input should be"),
    (b'{"gate":{"agreement":"\\n::error::x"}}', NOT_A_REPORT + "gate.agreement"),
    (b'{"model":["a"],"gate":{}}', NOT_A_REPORT + "model: Input should be a valid string"),
    (b'{"audit":[]}', NOT_A_REPORT + "audit: Input should be an object"),
]  # fmt: skip
"""An earlier report that is not one → what the message says after ``--compare PATH``: the
line or the key of the report's shape, never a key the file chose."""


@pytest.mark.parametrize(("data", "message"), COMPARE_BAD)
def test_a_compare_report_that_is_not_one_is_refused_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, message: str
) -> None:
    built = _no_model(monkeypatch)
    issues, _ = set_files(tmp_path)
    old = tmp_path / "old.json"
    old.write_bytes(data)
    out = tmp_path / "o.json"
    args = ["eval", "--only", "gate", "--split", "--issues", str(issues), "--out", str(out),
            "--compare", str(old)]  # fmt: skip
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert f"--compare {old}{message}" in result.stderr
    assert "ghp_x" not in result.stderr
    assert built == []
    assert not out.exists()


def test_an_earlier_report_is_compared_figure_by_figure(tmp_path: Path) -> None:
    """A report this command wrote compares with itself; one kept before the halves or the
    prompt version existed too (only what the comparison reads is read)."""
    issues, replies = set_files(tmp_path)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    base = ["eval", "--only", "gate", "--split", "--issues", str(issues), "--replies", str(replies)]
    assert invoke([*base, "--out", str(first)]).exit_code == 0
    old = json.loads(first.read_text("utf-8"))
    old["gate"].pop("halves")
    old["gate"].pop("prompt_version")
    first.write_text(json.dumps(old), "utf-8")
    result = invoke([*base, "--out", str(second), "--compare", str(first)])
    assert result.exit_code == 0, result.output
    assert "| gate agreement | 100.0% | 100.0% | +0.0% |" in result.stdout


@pytest.mark.parametrize("command_name", ["eval", "calibrate"])
@pytest.mark.parametrize("which", ["issues", "replies"])
def test_a_set_that_is_not_utf8_is_named(tmp_path: Path, command_name: str, which: str) -> None:
    issues, replies = set_files(tmp_path)
    bad = issues if which == "issues" else replies
    bad.write_bytes(bad.read_bytes().replace(b"\xc3\xa9", b"\xe9") + b"\xff\n")
    args = [command_name, "--issues", str(issues), "--replies", str(replies),
            "--out", str(tmp_path / "o.json")]  # fmt: skip
    if command_name == "eval":
        args[1:1] = ["--only", "gate"]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    what = f"--{which}"
    first_bad = next(
        number
        for number, line in enumerate(bad.read_bytes().split(b"\n"), start=1)
        if not _utf8(line)
    )
    assert f"{what} {bad}:{first_bad}: not UTF-8" in result.stderr


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


OUTPUTS = [
    ("eval", "--out"),
    ("eval", "--save-replies"),
    ("calibrate", "--out"),
]


def _with_outputs(args: list[str], tmp_path: Path, flag: str, path: str) -> list[str]:
    """``args`` (``eval`` or ``calibrate`` …) with ``--out`` in ``tmp_path`` and ``flag`` set to
    ``path`` (``eval`` judging the gate only)."""
    outputs = {"--out": str(tmp_path / "o.json"), flag: path}
    extra = ["--only", "gate"] if args[0] == "eval" else []
    return [*args, *extra, *(part for item in outputs.items() for part in item)]


@pytest.mark.parametrize(("command_name", "flag"), OUTPUTS)
@pytest.mark.parametrize("where", ["/nonexistent/o.json", "{tmp}/file/o.json"])
def test_an_output_that_cannot_be_written_is_refused_before_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command_name: str, flag: str, where: str
) -> None:
    """Its folder is missing (or a file): exit 2 naming the flag, and no model is built."""
    built = _no_model(monkeypatch)
    (tmp_path / "file").write_text("", "utf-8")
    issues, _ = set_files(tmp_path)
    path = where.format(tmp=tmp_path)
    result = invoke(_with_outputs([command_name, "--issues", str(issues)], tmp_path, flag, path))
    assert result.exit_code == 2, result.output
    assert f"{flag} {path}: the folder " in result.stderr
    assert built == []


@pytest.mark.parametrize(("command_name", "flag"), OUTPUTS)
def test_an_output_the_system_refuses_is_a_config_error(
    tmp_path: Path, command_name: str, flag: str
) -> None:
    """A name longer than the file system takes passes the folder check; writing it fails
    with a message, not a traceback."""
    issues, replies = set_files(tmp_path)
    path = tmp_path / ("o" * 300)
    args = [command_name, "--issues", str(issues), "--replies", str(replies)]
    result = invoke(_with_outputs(args, tmp_path, flag, str(path)))
    assert result.exit_code == 2, result.output
    assert f"{flag} {path}: cannot be written (File name too long)" in result.stderr


# --- JSONL: a line ends at LF only ---------------------------------------------------------------

LINE_BREAKS = st.text(
    st.one_of(st.sampled_from("\u2028\u2029\x85\x1c\x1d\x1e\x0b\x0c\r\n\r\n"), st.characters()),
    min_size=1,
)


@FUZZ
@given(LINE_BREAKS)
def test_a_reply_holding_any_line_break_reads_back(text: str) -> None:
    """What ``--save-replies`` writes (:func:`replies_jsonl`), ``--replies`` reads back."""
    assume(not any("\ud800" <= ch <= "\udfff" for ch in text))
    outcomes = [{"id": "a", "reply": text}, {"id": "b", "reply": "x" + text}]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.jsonl"
        path.write_text(
            replies_jsonl(outcomes, prompt_version="validator@0badc0de", model=text[:200]),
            "utf-8",
        )
        replies = load_replies(path)
    assert {k: r.reply for k, r in replies.by_id.items()} == {"a": text, "b": "x" + text}


@FUZZ
@given(LINE_BREAKS, LINE_BREAKS)
def test_an_issue_holding_any_line_break_reads_back(title: str, body: str) -> None:
    """A row as the dataset command writes it (pydantic's JSON, one per line) reads back."""
    assume(not any("\ud800" <= ch <= "\udfff" for ch in title + body))
    rows = [
        EvalIssue(id=f"i-{n}", kind=title, title=title, body=body, expected="VALID", rationale=body)
        for n in range(2)
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "i.jsonl"
        path.write_text(
            "".join(r.model_dump_json(exclude_defaults=True) + "\n" for r in rows), "utf-8"
        )
        assert load_jsonl(path, EvalIssue) == rows


# --- the calibrated policy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "ids",
    [
        [],
        ["bug-login-redirect", "bug-memory-leak"],  # tune only
        ["bug-csv-last-row"],  # check only
    ],
)
@pytest.mark.parametrize("force", [[], [FORCE]])
def test_calibrate_refuses_a_set_with_an_empty_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ids: list[str], force: list[str]
) -> None:
    """No policy is chosen or measured on nothing: exit 2 naming the half, before any model,
    whatever ``--force``."""
    built = _no_model(monkeypatch)
    assert {dev_half(i) for i in ids} != {"tune", "check"}
    issues = write_jsonl(tmp_path / "issues.jsonl", [r for r in ALL_ISSUE_ROWS if r["id"] in ids])
    out = tmp_path / "policy.json"
    result = invoke(["calibrate", "--issues", str(issues), "--out", str(out), *force])
    assert result.exit_code == 2, result.output
    assert f"({len(ids)} items) has no item on the " in result.stderr
    assert built == []
    assert not out.exists()


@pytest.mark.parametrize("keep", [0, 1, 5])
@pytest.mark.parametrize("force", [[], [FORCE]])
def test_calibrate_refuses_a_tune_half_with_no_needs_refinement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int, force: list[str]
) -> None:
    """Every policy that never asks for more agrees with an all-VALID tune half: refused
    (exit 2) before any model, however many items either half holds, whatever ``--force``."""
    built = _no_model(monkeypatch)
    rows = ALL_ISSUE_ROWS
    tune_valid = [r for r in rows if dev_half(r["id"]) == "tune" and r["expected"] == "VALID"]
    check = [r for r in rows if dev_half(r["id"]) == "check"][: max(1, keep)]
    rows = tune_valid[: max(1, keep * 3)] + check
    issues = write_jsonl(tmp_path / "issues.jsonl", rows)
    out = tmp_path / "policy.json"
    result = invoke(["calibrate", "--issues", str(issues), "--out", str(out), *force])
    assert result.exit_code == 2, result.output
    assert "holds no NEEDS_REFINEMENT item" in result.stderr
    assert built == []
    assert not out.exists()


@pytest.mark.parametrize("model_name", [None, "other-model", "qwen2.5-coder:1.5b"])
def test_a_calibrated_policy_names_no_other_model(tmp_path: Path, model_name: str | None) -> None:
    """The base policy's other names of its model are not the calibrated model's."""
    # the base: the policy shipped for the replies' model, which names another tag of it
    base = load_policy(ROOT / "bot" / "gate" / "policies" / "qwen2.5-coder-1.5b.json")
    assert base.measured is not None
    assert base.measured.model == REPLY_ROWS[0]["model"]
    assert base.same_model_as
    issues, replies = set_files(tmp_path)
    out = tmp_path / "policy.json"
    args = ["calibrate", "--issues", str(issues), "--replies", str(replies), "--out", str(out),
            FORCE]  # fmt: skip
    if model_name is not None:
        args += ["--model-name", model_name]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    policy = load_policy(out)
    assert policy.same_model_as == ()
    assert policy.measured is not None
    assert policy.measured.model == (model_name or REPLY_ROWS[0]["model"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--only", "gate", "--save-replies", "{tmp}/r.jsonl"],
         "--save-replies: the model's name: String should have at most 200 characters"),
        (["calibrate", FORCE],  # the name is checked before the model is called
         "the model's name (give --model-name): String should have at most 200 characters"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("length", [201, 255])
def test_a_live_model_name_no_replies_file_or_policy_holds_is_refused_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str, length: int
) -> None:
    """A GGUF file name may be longer than a replies line or a policy holds: refused before the
    first call, not after the run."""
    model = FakeChatModel(name="m" * length)
    monkeypatch.setattr(command, "make_chat_model", lambda *_: model)
    issues, _ = set_files(tmp_path)
    full = [a.format(tmp=tmp_path) for a in args]
    result = invoke([*full, "--issues", str(issues), "--out", str(tmp_path / "o.json")])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert model.history == []
