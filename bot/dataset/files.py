"""The rows and state files of a dataset run, so a stopped run resumes where it stopped."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.dataset.duplicates import FoundPair, PoolRow
from bot.dataset.type_rows import TypeRow
from bot.errors import ConfigError
from bot.evaluation.sets import EvalIssue
from bot.regular_file import (
    MAX_INPUT_BYTES,
    check_target,
    open_append,
    read_regular,
    write_atomic,
)

__all__ = [
    "DatasetFiles",
    "PageMark",
    "RowKind",
    "check_writable",
    "legacy_row_id",
    "row_id",
    "state_path",
    "torn_row",
]


def row_id(repo: str, number: int) -> str:
    """A row's id: ``Owner/Name`` #12 → ``owner-name-<tag>-12``.

    The tag (8 hex digits of the lower-cased name's SHA-256) keeps ``a-b/c`` and ``a/b-c`` apart.
    """
    name = repo.lower()
    tag = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{_slug(name)}-{tag}-{number}"


def legacy_row_id(repo: str, number: int) -> str:
    """The id earlier versions gave a row (``owner-name-12``): read when resuming, never written."""
    return f"{_slug(repo.lower())}-{number}"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")


_RATIONALE_ISSUE = re.compile(r"(?P<repo>[^\s#]+)#(?P<number>[0-9]+): ")
"""How a row's rationale names its issue: ``OWNER/NAME#12: …``."""


def torn_row(line: bytes) -> bool:
    """Whether ``line`` can be a row a crash cut short: it starts like an object, is not JSON."""
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        json.loads(line)
    except ValueError:  # not JSON, or not UTF-8
        return True
    return False


def state_path(out: Path) -> Path:
    """``FILE.state.json`` beside ``out``."""
    return out.with_name(out.name + ".state.json")


def check_writable(out: Path) -> None:
    """Check that a run can write ``out`` and its state file; :exc:`ConfigError` if not.

    Missing folders are fine: they are made when the first row is written.
    """
    folder = out.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"--out {out}: cannot be written: {folder} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
        if out.parent.is_dir():
            check_target(state_path(out))
        if out.exists() or out.is_symlink():
            with open_append(out):
                pass
    except OSError as exc:
        what = str(exc.filename) if exc.filename == str(state_path(out)) else f"--out {out}"
        raise _not_written(what, exc) from None


def _not_written(what: str, exc: OSError) -> ConfigError:
    return ConfigError(f"{what}: cannot be written: {exc.strerror or exc}")


class PageMark(BaseModel):
    """A page of the closed-issues list whose issues are all done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    etag: str
    last: bool = False
    issues: bool = True
    """Whether it held any issue, not only pull requests."""


class _RepoState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skipped: dict[str, str] = Field(default_factory=dict)
    pages: dict[str, PageMark] = Field(default_factory=dict)
    pairs: dict[str, FoundPair] = Field(default_factory=dict)
    """A duplicates pool's pairs found so far, by the duplicate's row id."""
    pulls: list[int] = Field(default_factory=list)
    """A duplicates pool's pull request numbers seen in the list."""


RowKind = Literal["eval", "types", "pool"]
"""What a rows file holds: the eval format's labelled rows, type rows, or a duplicates pool."""

_KIND_NAMES: dict[RowKind, str] = {
    "eval": "readiness rows",
    "types": "type rows",
    "pool": "a duplicates pool",
}


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rows: RowKind = "eval"
    repos: dict[str, _RepoState] = Field(default_factory=dict)


class DatasetFiles:
    """The rows file and the state file of one run for one repository.

    ``rows`` says which rows the file holds (:class:`EvalIssue` or :class:`TypeRow`). Opening
    drops a torn last row. Raises :exc:`ConfigError`, naming the file, for any other line that
    is not such a row, a foreign state file (the other kind's too), or a failed write.
    """

    def __init__(self, out: Path, repo: str, *, rows: RowKind = "eval") -> None:
        self.out = out
        self.state_file = state_path(out)
        self.repo = repo
        self.rows = rows
        self.dropped_torn_line = False
        self._needs_line_end = False
        self._legacy_rows: set[tuple[str, int]] = set()
        self.row_ids = self._read_rows()
        self._state = self._read_state()
        check_writable(out)
        self._mine = self._state.repos.setdefault(repo, _RepoState())
        self._dirty = False

    def _read_rows(self) -> set[str]:
        try:
            raw = read_regular(self.out, limit=MAX_INPUT_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            return set()
        except OSError as exc:
            raise ConfigError(
                f"--out {self.out}: cannot be read ({exc.strerror or type(exc).__name__})"
            ) from None
        lines = raw.split(b"\n")
        ids: set[str] = set()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                if self.rows == "types":
                    ids.add(TypeRow.model_validate_json(line).id)
                elif self.rows == "pool":
                    ids.add(PoolRow.model_validate_json(line).id)
                else:
                    row = EvalIssue.model_validate_json(line)
                    ids.add(row.id)
                    self._note_legacy(row)
            except ValidationError:
                if number == len(lines) and ids and torn_row(line):
                    self.dropped_torn_line = True
                    continue
                what, flag = {
                    "eval": ("a row of the eval format", ""),
                    "types": ("a type row", " --types"),
                    "pool": ("a pool row", " --duplicates"),
                }[self.rows]
                raise ConfigError(
                    f"--out {self.out}:{number}: not {what}; give a new file, or the one an "
                    f"earlier dataset run{flag} wrote"
                ) from None
        if self.dropped_torn_line:  # every other line is a row: only the torn one goes
            try:
                with open_append(self.out) as handle:
                    handle.truncate(len(raw) - len(lines[-1]))
            except OSError as exc:
                raise _not_written(f"--out {self.out}", exc) from None
        self._needs_line_end = bool(lines[-1].strip()) and not self.dropped_torn_line
        return ids

    def _note_legacy(self, row: EvalIssue) -> None:
        # The old id alone may be another repository's: its rationale names the repository.
        named = _RATIONALE_ISSUE.match(row.rationale)
        if named is None:
            return
        repo, number = named["repo"].lower(), int(named["number"])
        if row.id == legacy_row_id(repo, number):
            self._legacy_rows.add((repo, number))

    def _read_state(self) -> _State:
        try:
            raw = read_regular(self.state_file, limit=MAX_INPUT_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            return _State(rows=self.rows)
        except OSError as exc:
            raise ConfigError(
                f"{self.state_file}: cannot be read ({exc.strerror or type(exc).__name__})"
            ) from None
        try:
            state = _State.model_validate_json(raw)
        except ValidationError:
            raise ConfigError(
                f"{self.state_file}: not the state a dataset run keeps; delete it to read "
                "every issue again (the rows in --out are kept)"
            ) from None
        if state.rows != self.rows:
            kept, asked = _KIND_NAMES[state.rows], _KIND_NAMES[self.rows]
            raise ConfigError(
                f"{self.state_file}: kept by a run that wrote {kept}, and this one writes "
                f"{asked}: give each its own --out"
            )
        return state

    def done(self, number: int) -> bool:
        """Whether issue ``number`` is in the rows or skipped, under its id or the legacy one."""
        item_id = row_id(self.repo, number)
        return (
            item_id in self.row_ids
            or item_id in self._mine.skipped
            or legacy_row_id(self.repo, number) in self._mine.skipped
            or (self.repo.lower(), number) in self._legacy_rows
        )

    def page(self, key: str) -> PageMark | None:
        return self._mine.pages.get(key)

    def append(self, row: EvalIssue | TypeRow | PoolRow) -> None:
        """Append one row and flush it to disk; a row already there is not written again."""
        if row.id in self.row_ids:
            return
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with open_append(self.out) as handle:
                if self._needs_line_end:  # a last row someone saved without its line end
                    handle.write(b"\n")
                    self._needs_line_end = False
                handle.write(row.model_dump_json(exclude_defaults=True).encode("utf-8") + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise _not_written(f"--out {self.out}", exc) from None
        self.row_ids.add(row.id)

    def skip(self, item_id: str, reason: str) -> None:
        """Keep an issue left out, with its reason, for :meth:`save`."""
        self._mine.skipped[item_id] = reason
        self._dirty = True

    def mark_page(self, key: str, mark: PageMark) -> None:
        """Keep a page whose issues are all done, for :meth:`save`."""
        self._mine.pages[key] = mark
        self._dirty = True

    def found_pair(self, item_id: str, pair: FoundPair) -> None:
        """Keep a pair found for a duplicates pool, for :meth:`save`."""
        self._mine.pairs[item_id] = pair
        self._dirty = True

    def found_pairs(self) -> dict[str, FoundPair]:
        """Duplicate's row id → the pair found, for this repository."""
        return dict(self._mine.pairs)

    def saw_pulls(self, numbers: list[int]) -> None:
        """Keep pull request numbers the list gave, for :meth:`save`."""
        new = set(numbers) - set(self._mine.pulls)
        if new:
            self._mine.pulls = sorted({*self._mine.pulls, *new})
            self._dirty = True

    def pulls(self) -> frozenset[int]:
        """The pull request numbers the list gave so far."""
        return frozenset(self._mine.pulls)

    def skipped_reasons(self) -> dict[str, str]:
        """Id → reason of every issue left out so far for this repository."""
        return dict(self._mine.skipped)

    def save(self) -> None:
        """Write the state file atomically, when anything changed."""
        if not self._dirty:
            return
        data = json.loads(self._state.model_dump_json())
        for kept in data["repos"].values():  # only a duplicates pool keeps these
            for key in ("pairs", "pulls"):
                if not kept[key]:
                    del kept[key]
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.state_file, text.encode("utf-8"))
        except OSError as exc:
            raise _not_written(str(self.state_file), exc) from None
        self._dirty = False
