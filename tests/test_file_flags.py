"""Every file ``eval``, ``calibrate``, ``dataset``, the gate policy and the Actions files are
given, through the real CLI: a path that is not a regular file (a FIFO, ``/dev/zero``, a
socket, a directory, a file over the bound; for a file written, a link, a FIFO behind a link as
``/dev/stdout`` on a pipe) is refused at once with exit 2 naming the flag and the path, nothing
is written through a link, and a file that is not what it should be is named by its line,
never shown (a token file, ``/proc/self/environ``)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import main
from bot.dataset.files import state_path
from bot.policy_file import MAX_POLICY_BYTES
from bot.regular_file import MAX_INPUT_BYTES
from tests.evaluation.test_eval_cli import set_files, write_jsonl
from tests.support import ROOT, cassette, load_webhook, write_payload
from tests.support.hostile_files import OUTPUTS, RELEASE_AFTER_S, SECRET, inputs, secret_lines

TOKEN = "test-token-not-real"
REPO = "Codertocat/Hello-World"

SEGMENT_ROWS = [
    json.loads(line)
    for line in (ROOT / "evals" / "segments.jsonl").read_text("utf-8").split("\n")[:2]
]


def _invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[Result, float]:
    started = time.monotonic()
    result = CliRunner().invoke(main, args, env=env)
    return result, time.monotonic() - started


def _refused(result: Result, spent: float, *names: str) -> None:
    """Exit 2 with a message (no traceback) naming each of ``names``, at once."""
    assert spent < RELEASE_AFTER_S / 2, "it waited on a FIFO"
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    for name in names:
        assert name in result.stderr, (name, result.stderr)


# --- the files read -------------------------------------------------------------------------

Args = Callable[[Path, Path], list[str]]
"""(a folder of valid files, the path under test) → the command line."""


def _eval(flag: str, only: str = "gate") -> Args:
    def args(folder: Path, path: Path) -> list[str]:
        issues, replies = set_files(folder)
        segments = write_jsonl(folder / "segments.jsonl", SEGMENT_ROWS)
        files = {"--issues": issues, "--segments": segments, "--replies": replies}
        files[flag] = path
        line = ["eval", "--only", only, "--out", str(folder / "report.json")]
        return line + [part for name, value in files.items() for part in (name, str(value))]

    return args


def _calibrate(flag: str) -> Args:
    def args(folder: Path, path: Path) -> list[str]:
        issues, replies = set_files(folder)
        files = {"--issues": issues, "--replies": replies}
        files[flag] = path
        # --force: a set this small is refused (tests/evaluation/test_calibrate.py), and these tests
        # are about the files calibrate reads and writes
        line = ["calibrate", "--force", "--out", str(folder / "policy.json")]
        return line + [part for name, value in files.items() for part in (name, str(value))]

    return args


def _policy(folder: Path, path: Path) -> list[str]:
    return [*_eval("--issues")(folder, folder / "issues.jsonl"), "--gate-policy", str(path)]


READERS: dict[str, tuple[Args, int]] = {
    "eval --issues": (_eval("--issues"), MAX_INPUT_BYTES),
    "eval --segments": (_eval("--segments", "audit"), MAX_INPUT_BYTES),
    "eval --replies": (_eval("--replies"), MAX_INPUT_BYTES),
    "eval --compare": (_eval("--compare"), MAX_INPUT_BYTES),
    "calibrate --issues": (_calibrate("--issues"), MAX_INPUT_BYTES),
    "calibrate --replies": (_calibrate("--replies"), MAX_INPUT_BYTES),
    "--gate-policy": (_policy, MAX_POLICY_BYTES),
}
"""Each file read by ``eval`` and ``calibrate`` → its command line and the bound it is read to."""

READ_CASES = [(reader, kind) for reader in READERS for kind in inputs(0)]

REASONS = {
    "a FIFO": "is a FIFO, not a regular file",
    "a link to a FIFO": "is a FIFO, not a regular file",
    "/dev/zero": "is a character device, not a regular file",
    "a socket": "is a socket, not a regular file",
    "a directory": "is a directory",
    "a file over the bound": "cannot be read (larger than ",
}
"""What the message says of each kind (a directory: click's own refusal)."""

NOT_A_SETTING_FILE = "(no such gate policy file)"
"""The gate policy setting's own refusal of a path that is not a regular file, at resolve."""


def _set_up(tmp_path: Path, reader: str, write: Callable[[Path], Path]) -> list[str]:
    folder = tmp_path / "work"
    folder.mkdir()
    make_args, _ = READERS[reader]
    return make_args(folder, write(tmp_path / "given"))


@pytest.mark.parametrize(("reader", "kind"), READ_CASES)
def test_a_file_to_read_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, reader: str, kind: str
) -> None:
    _, bound = READERS[reader]
    args = _set_up(tmp_path, reader, inputs(bound)[kind])
    flag = reader.split()[-1]
    given = args[args.index(flag) + 1]
    result, spent = _invoke(args)
    reason = REASONS[kind]
    if reader == "--gate-policy" and kind not in ("a directory", "a file over the bound"):
        reason = NOT_A_SETTING_FILE
    # the policy may come from a variable too: "the gate policy PATH", or click's "--gate-policy"
    named = "gate" if reader == "--gate-policy" else flag
    _refused(result, spent, named, given, reason)
    assert not (tmp_path / "work" / "report.json").exists()
    assert not (tmp_path / "work" / "policy.json").exists()


WHOLE_FILES = ("eval --compare", "--gate-policy")
"""The files read as one JSON document, not a line each."""

SECRET_CASES = [
    (reader, n) for reader in READERS for n in ((0,) if reader in WHOLE_FILES else (0, 2))
]
"""Each file read → how many valid lines come before the one that is not an item."""


@pytest.mark.parametrize("line", secret_lines())
@pytest.mark.parametrize(("reader", "valid_lines"), SECRET_CASES)
def test_a_line_that_is_not_an_item_is_named_never_shown(
    tmp_path: Path, reader: str, valid_lines: int, line: str
) -> None:
    """A token file given by mistake, or a set with a broken line after good ones: the file and
    line are named, and not a character of what the line holds."""
    folder = tmp_path / "work"
    folder.mkdir()
    issues, replies = set_files(folder)
    segments = write_jsonl(folder / "segments.jsonl", SEGMENT_ROWS)
    good = {"eval --issues": issues, "eval --segments": segments, "eval --replies": replies,
            "calibrate --issues": issues, "calibrate --replies": replies}  # fmt: skip
    kept = good[reader].read_text("utf-8").split("\n")[:valid_lines] if reader in good else []
    given = tmp_path / "given"
    given.write_text("".join(f"{k}\n" for k in kept) + line + "\n", "utf-8")
    if reader == "--gate-policy":
        given.write_text(line, "utf-8")
    args = READERS[reader][0](folder, given)
    result, spent = _invoke(args)
    assert SECRET not in result.output
    assert SECRET[4:12] not in result.output
    if reader == "eval --compare" and result.exit_code == 0:
        return  # an object whose keys a report does not have: read as a report without figures
    _refused(result, spent, str(given))
    if reader in good:
        assert f"{given}:{valid_lines + 1}: " in result.stderr


@pytest.mark.parametrize("reader", READERS)
def test_the_environment_of_a_process_given_as_a_file_is_never_shown(
    tmp_path: Path, reader: str
) -> None:
    environ = Path("/proc/self/environ")
    if not environ.exists():
        pytest.skip("no /proc here")
    pieces = [p for p in environ.read_bytes().split(b"\0") if len(p) >= 12]
    if not pieces:
        pytest.skip("an empty environment")
    folder = tmp_path / "work"
    folder.mkdir()
    result, spent = _invoke(READERS[reader][0](folder, environ))
    _refused(result, spent, str(environ))
    for piece in pieces:
        assert piece.decode("utf-8", "replace")[:12] not in result.output


# --- the files written by eval and calibrate -------------------------------------------------

WRITERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "eval --out": lambda folder, out: [*_eval("--issues")(folder, folder / "issues.jsonl"),
                                       "--out", str(out)],
    "eval --save-replies": lambda folder, out: [
        *_eval("--issues")(folder, folder / "issues.jsonl"), "--save-replies", str(out)],
    "calibrate --out": lambda folder, out: [
        *_calibrate("--issues")(folder, folder / "issues.jsonl"), "--out", str(out)],
}  # fmt: skip
"""Each file ``eval`` and ``calibrate`` write → the command line writing it to ``out``."""


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes | str | None]]:
    """Every entry of ``folder``: its mode and content (a link: where it points)."""
    return {
        p.name: (
            p.lstat().st_mode,
            os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None,
        )
        for p in folder.iterdir()
    }


@pytest.mark.parametrize("kind", OUTPUTS)
@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_to_write_that_is_not_a_regular_file_is_refused_before_the_run(
    tmp_path: Path, writer: str, kind: str
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    set_files(folder)
    place = tmp_path / "place"
    place.mkdir()
    out = OUTPUTS[kind](place / "out.json")
    before = _snapshot(place)
    result, spent = _invoke(WRITERS[writer](folder, out))
    _refused(result, spent, f"{writer.split()[-1]} {out}: cannot be written (is ")
    assert _snapshot(place) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_written_is_whole_and_replaces_no_link(tmp_path: Path, writer: str) -> None:
    """A file there is replaced whole; nothing but it is left in its folder."""
    folder = tmp_path / "work"
    folder.mkdir()
    set_files(folder)
    place = tmp_path / "place"
    place.mkdir()
    out = place / "out.json"
    out.write_text("old", "utf-8")
    result, _ = _invoke(WRITERS[writer](folder, out))
    assert result.exit_code == 0, result.output
    assert out.read_text("utf-8") != "old"
    assert [p.name for p in place.iterdir()] == ["out.json"]


# --- the dataset's rows and state ------------------------------------------------------------


def _dataset(out: Path) -> tuple[Result, float, list[Any]]:
    captured: list[Any] = []
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "https://api.github.com"}
    with cassette("dataset_no_closed_issues", captured):
        result, spent = _invoke(["dataset", "--repo", REPO, "--out", str(out)], env)
    return result, spent, captured


@pytest.mark.parametrize(
    "kind", [*OUTPUTS, *(k for k in inputs(0) if k not in ("a FIFO", "a socket"))]
)
@pytest.mark.parametrize("which", ["--out", "the state file"])
def test_a_dataset_file_that_is_not_a_regular_file_is_refused_before_any_request(
    tmp_path: Path, which: str, kind: str
) -> None:
    out = tmp_path / "set.jsonl"
    target = out if which == "--out" else state_path(out)
    make = OUTPUTS.get(kind) or inputs(MAX_INPUT_BYTES)[kind]
    if kind == "/dev/zero":
        target.symlink_to("/dev/zero")
    else:
        make(target)
    before = _snapshot(tmp_path)
    result, spent, captured = _dataset(out)
    _refused(result, spent, str(target))
    assert captured == []
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("line", secret_lines())
@pytest.mark.parametrize("which", ["--out", "the state file"])
def test_a_dataset_file_that_is_not_ours_is_named_never_shown(
    tmp_path: Path, which: str, line: str
) -> None:
    out = tmp_path / "set.jsonl"
    (out if which == "--out" else state_path(out)).write_text(line + "\n", "utf-8")
    result, spent, captured = _dataset(out)
    _refused(result, spent, str(out))
    assert captured == []
    assert SECRET not in result.output


PLANTED: dict[str, Callable[[Path, Path], object]] = {
    "a link to a file": lambda trap, victim: trap.symlink_to(victim),
    "a dangling link": lambda trap, _victim: trap.symlink_to(trap.with_name("nowhere")),
    "a FIFO": lambda trap, _victim: OUTPUTS["a FIFO"](trap),
    "a directory": lambda trap, _victim: trap.mkdir(),
}


@pytest.mark.parametrize("planted", PLANTED)
def test_the_state_file_is_never_written_through_what_waits_beside_it(
    tmp_path: Path, planted: str
) -> None:
    """``FILE.state.json.tmp`` (the name a temporary file once had) planted beforehand: the run
    writes its state as ever, and what was planted, and what a link names, stay as they were."""
    out = tmp_path / "set.jsonl"
    victim = tmp_path / "victim"
    victim.write_text("not the bot's\n", "utf-8")
    trap = state_path(out).with_name(state_path(out).name + ".tmp")
    PLANTED[planted](trap, victim)
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "https://api.github.com"}
    with cassette("dataset_rules"):
        result, spent = _invoke(["dataset", "--repo", REPO, "--out", str(out)], env)
    assert spent < RELEASE_AFTER_S / 2
    assert result.exit_code == 0, result.output
    assert victim.read_text("utf-8") == "not the bot's\n"
    assert trap.is_symlink() or trap.exists()
    assert json.loads(state_path(out).read_text("utf-8"))["repos"][REPO]["skipped"]
    assert not state_path(out).is_symlink()


# --- the Actions files ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", OUTPUTS)
@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
def test_an_actions_file_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, variable: str, kind: str
) -> None:
    place = tmp_path / "place"
    place.mkdir()
    target = OUTPUTS[kind](place / "file")
    before = _snapshot(place)
    payload = write_payload(tmp_path, load_webhook("issues.labeled.9"))  # skipped: no model
    result, spent = _invoke(
        ["run", "--event-name", "issues", "--event-path", str(payload)], {variable: str(target)}
    )
    _refused(result, spent, f"{variable} {target}: cannot be written (is ")
    assert _snapshot(place) == before
