"""The one reader and writer of the files the bot is given (bot/regular_file.py): regular files
only, every read bounded, writes atomic and never through a link, errors that name the file
and never its content."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from bot import regular_file
from bot.errors import ConfigError
from bot.evaluation.replies import RecordedReply
from bot.evaluation.report import _ReportShape
from bot.evaluation.sets import EvalIssue, EvalSegment
from bot.policy_file import GatePolicy
from bot.regular_file import (
    FileTooLarge,
    NotRegularFile,
    check_target,
    content_problems,
    field_names,
    open_append,
    read_input,
    read_regular,
    write_atomic,
)
from tests.support.hostile_files import OUTPUTS, RELEASE_AFTER_S, SECRET, fifo, inputs
from tests.support.profiles import FUZZ

LIMIT = 1000
READS = inputs(LIMIT)


@pytest.fixture
def quick() -> Iterator[None]:
    """The test ends well before a FIFO would be released (it never waited on one)."""
    started = time.monotonic()
    yield
    assert time.monotonic() - started < RELEASE_AFTER_S / 2


# --- reading --------------------------------------------------------------------------------


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("kind", READS)
def test_what_is_not_a_regular_file_within_the_bound_is_refused_at_once(
    tmp_path: Path, kind: str
) -> None:
    path = READS[kind](tmp_path / "input")
    with pytest.raises((NotRegularFile, FileTooLarge, OSError)) as caught:
        read_regular(path, limit=LIMIT)
    assert caught.value.filename == str(path)
    with pytest.raises(ConfigError) as named:
        read_input(path, what="--thing", limit=LIMIT)
    assert str(named.value).startswith(f"--thing {path}: cannot be read (")


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("a FIFO", "is a FIFO, not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
        ("a directory", "is a directory, not a regular file"),
        ("a file over the bound", f"larger than {LIMIT:,} bytes"),
    ],
)
def test_the_refusal_says_what_the_path_is(tmp_path: Path, kind: str, reason: str) -> None:
    path = READS[kind](tmp_path / "input")
    with pytest.raises(ConfigError, match=f": cannot be read \\({reason}\\)$"):
        read_input(path, what="--thing", limit=LIMIT)


@pytest.mark.parametrize("size", [0, 1, LIMIT - 1, LIMIT])
def test_a_file_up_to_the_bound_is_read_whole(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * size)
    assert read_regular(path, limit=LIMIT) == b"x" * size
    link = tmp_path / "link"
    link.symlink_to(path)  # a person's own link to their file is read
    assert read_input(link, what="--thing", limit=LIMIT) == "x" * size
    with pytest.raises(NotRegularFile, match="symbolic link"):
        read_regular(link, limit=LIMIT, follow_symlinks=False)


def test_a_file_whose_size_says_nothing_is_still_bounded() -> None:
    """Files under /proc give their size as 0: the read itself stops past the bound."""
    environ = Path("/proc/self/environ")
    if not environ.exists() or not os.environ:
        pytest.skip("no /proc here")
    with pytest.raises(FileTooLarge):
        read_regular(environ, limit=4)


@given(
    lines=st.lists(
        st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=20), max_size=6
    ),
    bad=st.sampled_from([b"\xff", b"\xc3", b"\xe9t\xe9", b"\xed\xa0\x80"]),
)
@FUZZ
def test_text_that_is_not_utf8_is_named_by_its_line_never_shown(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], bad: bytes
) -> None:
    path = tmp_path_factory.mktemp("utf8") / "f"
    good = "".join(line + "\n" for line in lines).encode("utf-8")
    path.write_bytes(good + SECRET.encode() + bad + b"\n")
    with pytest.raises(ConfigError) as caught:
        read_input(path, what="--thing")
    assert str(caught.value) == f"--thing {path}:{len(lines) + 1}: not UTF-8"


# --- writing whole files ---------------------------------------------------------------------


def _left(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("kind", OUTPUTS)
def test_a_target_that_is_not_a_regular_file_is_refused_not_written_through(
    tmp_path: Path, kind: str
) -> None:
    target = OUTPUTS[kind](tmp_path / "out.json")
    before = {p: (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
              for p in tmp_path.iterdir()}  # fmt: skip
    with pytest.raises(NotRegularFile) as caught:
        check_target(target)
    assert caught.value.filename == str(target)
    with pytest.raises(NotRegularFile):
        write_atomic(target, b"the bot's")
    after = {p: (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
             for p in tmp_path.iterdir()}  # fmt: skip
    assert after == before  # no temporary file left, the link and what it names untouched


def test_a_directory_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(NotRegularFile, match="is a directory"):
        write_atomic(tmp_path / "out", b"x")


@pytest.mark.parametrize("exists", [False, True])
def test_a_write_replaces_the_file_whole(tmp_path: Path, exists: bool) -> None:
    target = tmp_path / "out.json"
    if exists:
        target.write_bytes(b"old content that is longer")
        target.chmod(0o640)
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert _left(tmp_path) == {"out.json"}
    mode = stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == (0o640 if exists else 0o666 & ~umask)


PLANTED: dict[str, Callable[[Path, Path], object]] = {
    "a link to a file": lambda trap, victim: trap.symlink_to(victim),
    "a dangling link": lambda trap, _victim: trap.symlink_to(trap.with_name("nowhere")),
    "a FIFO": lambda trap, _victim: fifo(trap),
    "a file": lambda trap, _victim: trap.write_bytes(b"planted"),
}
"""What may wait at the name of a write's temporary file → how to plant it there."""


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("planted", PLANTED)
def test_something_planted_at_the_temporary_name_is_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """Whatever waits at the name a write would take first, the write takes another name."""
    names = iter(["guessed", "fresh"])
    monkeypatch.setattr(regular_file.secrets, "token_hex", lambda _n: next(names))
    trap, victim = tmp_path / ".out.json.guessed.tmp", tmp_path / "victim"
    victim.write_bytes(b"not the bot's")
    PLANTED[planted](trap, victim)
    before = trap.lstat()
    write_atomic(tmp_path / "out.json", b"the bot's")
    assert (tmp_path / "out.json").read_bytes() == b"the bot's"
    assert victim.read_bytes() == b"not the bot's"
    after = trap.lstat()
    assert (after.st_ino, after.st_mode, after.st_size) == (
        before.st_ino, before.st_mode, before.st_size,
    )  # fmt: skip
    assert not (tmp_path / ".out.json.fresh.tmp").exists()


def test_when_every_temporary_name_is_taken_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regular_file.secrets, "token_hex", lambda _n: "taken")
    (tmp_path / ".out.json.taken.tmp").symlink_to(tmp_path / "victim")
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "out.json", b"x")
    assert _left(tmp_path) == {".out.json.taken.tmp"}


@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_write_that_fails_keeps_the_old_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def fail(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    if step == "write":
        monkeypatch.setattr(regular_file.os, "fdopen", lambda *a, **k: _Failing())
    else:
        monkeypatch.setattr(regular_file.os, step, fail)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert _left(tmp_path) == {"out.json"}


class _Failing:
    """A file object whose write fails (a full disk)."""

    def __enter__(self) -> _Failing:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def write(self, _data: bytes) -> int:
        raise OSError(28, "No space left on device")


def test_the_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        check_target(tmp_path / "missing" / "out.json")
    assert caught.value.filename == str(tmp_path / "missing")


# --- appending -------------------------------------------------------------------------------


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("kind", OUTPUTS)
def test_an_append_never_goes_through_a_link_or_into_a_fifo(tmp_path: Path, kind: str) -> None:
    target = OUTPUTS[kind](tmp_path / "rows.jsonl")
    with pytest.raises(NotRegularFile):
        open_append(target)
    victim = tmp_path / "rows.jsonl.victim"
    if victim.exists():
        assert victim.read_text("utf-8") == "not the bot's\n"


def test_an_append_makes_the_file_and_adds_to_it(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    for line in (b"a\n", b"b\n"):
        with open_append(path) as out:
            out.write(line)
    assert path.read_bytes() == b"a\nb\n"


# --- what an error about content may say -----------------------------------------------------

MODELS: list[type[BaseModel]] = [EvalIssue, EvalSegment, RecordedReply, GatePolicy, _ReportShape]

TEMPLATES = [
    "{s}",
    '"{s}"',
    "[{s!r}]",
    '{{"{s}": 1}}',
    '{{"{s}": {{"{s}": ["{s}"]}}}}',
    '{{"id": "{s}", "reply": 1}}',
    '{{"id": "a", "reply": ["{s}"]}}',
    '{{"expected": "{s}", "kind": 3}}',
    '{{"verdict_from": "{s}", "guards": ["{s}"]}}',
    '{{"gate": {{"halves": {{"{s}": 5}}, "agreement": "{s}"}}}}',
    '{{"measured": {{"{s}": 1, "model": ["{s}"]}}}}',
    "{{{s}",
]
"""JSON (or not) with the secret in every place: raw, a string, a key, a value of each kind."""


@given(
    secret=st.text("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=12, max_size=40).map("ZQ9".__add__),
    template=st.sampled_from(TEMPLATES),
    model=st.sampled_from(MODELS),
)
@FUZZ
def test_an_error_about_content_never_holds_the_content(
    secret: str, template: str, model: type[BaseModel]
) -> None:
    text = template.format(s=secret)
    try:
        model.model_validate_json(text)
    except ValidationError as exc:
        message = content_problems(exc, field_names(model))
    else:
        return
    assert secret not in message
    assert message


def test_an_error_names_the_keys_the_shape_has() -> None:
    with pytest.raises(ValidationError) as caught:
        EvalIssue.model_validate_json(
            json.dumps(
                {"id": "a", "kind": "k", "body": "b", "expected": 3, "rationale": "r", "zz": 1}
            )
        )
    message = content_problems(caught.value, field_names(EvalIssue))
    assert message == (
        "title: Field required; expected: Input should be 'VALID' or 'NEEDS_REFINEMENT'; "
        "(a key): Extra inputs are not permitted"
    )
    assert "guards" in field_names(GatePolicy)
    assert "nr_precision" in field_names(GatePolicy)  # nested models' keys too
