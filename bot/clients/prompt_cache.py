"""llama.cpp states on disk, so a new process evaluates only what follows the system prompt.

A state is keyed by all that makes it valid: the GGUF (path, size, mtime), llama-cpp-python's
version, the context size and the system message. Only a token-exact prefix is reused, so a
loaded state can only save work. The folder must be this user's alone (docs/security.md); an
entry is opened as a regular file, never a link, within its bound, and used only if its record,
size and SHA-256 match. A bad entry is deleted and rebuilt from a full evaluation.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import stat
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.errors import ConfigError
from bot.regular_file import open_regular, read_regular

__all__ = ["MAX_RECORD_BYTES", "CacheEntry", "PromptCache"]

_FORMAT = 1

MAX_RECORD_BYTES = 4096
"""Largest record read (bytes); a record is about 300."""

_STATE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\.state")
"""A state file's name in a record: a bare name in the folder, never a path elsewhere."""


class CacheEntry(BaseModel):
    """The JSON record of one cached state (``<key>.json``); ``size`` in bytes."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: int
    key: str
    state: str
    sha256: str
    size: int
    n_tokens: int


def _digest(handle: BinaryIO, limit: int) -> tuple[str, int] | None:
    """SHA-256 and size from where ``handle`` is; ``None`` past ``limit`` bytes."""
    digest, size = hashlib.sha256(), 0
    while block := handle.read(min(1 << 20, limit + 1 - size)):
        size += len(block)
        if size > limit:
            return None
        digest.update(block)
    return digest.hexdigest(), size


def _private_folder(folder: Path) -> None:
    """Create ``folder`` ``0700``, or check it and tighten a group- or world-readable one.

    Raises:
        ConfigError: not a folder, another user's, or writable by its group or others.
    """
    fix = (
        "point TRIAGE_PROMPT_CACHE at a folder only this runner's user can write, "
        "or turn the cache off with TRIAGE_PROMPT_CACHE_MB=0"
    )
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as exc:
        raise ConfigError(f"prompt cache folder {folder}: {exc.strerror}; {fix}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"prompt cache folder {folder}: not a folder; {fix}")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"prompt cache folder {folder} belongs to uid {info.st_uid}, not to this "
            f"runner's user (uid {os.geteuid()}): its owner could plant states; {fix}"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise ConfigError(
            f"prompt cache folder {folder} is writable by its group or others (mode "
            f"{mode:04o}): they could plant states; empty it and chmod 700 it, or {fix}"
        )
    if mode & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError as exc:
            raise ConfigError(f"prompt cache folder {folder}: {exc.strerror}; {fix}") from None


def _fd_path(handle: BinaryIO, path: Path) -> str:
    """``/dev/fd/N`` for ``handle``'s very file where the system has it, else ``path``."""
    return f"/dev/fd/{handle.fileno()}" if os.path.isdir("/dev/fd") else str(path)


class PromptCache:
    """llama.cpp states on disk, one per key.

    Args:
        max_bytes: the folder's bound; the oldest states go first, and none larger is kept.
    """

    def __init__(self, directory: Path, *, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._checked = False

    def folder(self) -> Path:
        """The folder, created or checked once; raises ConfigError if not this user's alone."""
        if not self._checked:
            _private_folder(self.directory)
            self._checked = True
        return self.directory

    @staticmethod
    def key(model_path: Path, n_ctx: int, prefix: str) -> str:
        """SHA-256 (hex) of a state's validity: GGUF, library version, ``n_ctx``, ``prefix``.

        Raises:
            OSError: the GGUF cannot be stat'ed.
        """
        stat_ = model_path.resolve().stat()
        try:
            version = metadata.version("llama_cpp_python")
        except metadata.PackageNotFoundError:
            version = "unknown"
        parts = [str(model_path.resolve()), str(stat_.st_size), str(stat_.st_mtime_ns), version,
                 str(n_ctx), prefix]  # fmt: skip
        return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()

    def _record(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _drop(self, key: str, entry: CacheEntry | None = None) -> None:
        with contextlib.suppress(OSError):
            self._record(key).unlink()
        if entry is not None and _STATE_NAME.fullmatch(entry.state):
            with contextlib.suppress(OSError):
                (self.directory / entry.state).unlink()

    def _verified(self, key: str) -> tuple[CacheEntry, BinaryIO] | None:
        """The entry and its state file opened at the start, if they match; else deleted."""
        record = self.folder() / f"{key}.json"
        try:
            raw = read_regular(record, limit=MAX_RECORD_BYTES, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError:  # a link, a FIFO, a device, a folder, or too long: never a record
            self._drop(key)
            return None
        try:
            entry = CacheEntry.model_validate_json(raw)
        except (ValidationError, ValueError):
            self._drop(key)
            return None
        valid = (
            entry.format == _FORMAT
            and entry.key == key
            and bool(_STATE_NAME.fullmatch(entry.state))
            and 0 < entry.size <= self.max_bytes
        )
        handle = None
        if valid:
            with contextlib.suppress(OSError):
                handle = open_regular(self.directory / entry.state, follow_symlinks=False)
        if handle is not None and _digest(handle, entry.size) == (entry.sha256, entry.size):
            handle.seek(0)
            return entry, handle
        if handle is not None:
            handle.close()
        self._drop(key, entry)
        return None

    def entry(self, key: str) -> CacheEntry | None:
        """The key's entry if valid, else ``None`` (a bad one deleted); raises as :meth:`folder`."""
        found = self._verified(key)
        if found is None:
            return None
        entry, handle = found
        handle.close()
        return entry

    def restore(self, llm: Any, key: str) -> int:
        """Load the key's state into ``llm``; the tokens restored, 0 (``llm`` left empty) if none.

        Raises:
            ConfigError: the folder is not this user's alone.
        """
        import llama_cpp

        found = self._verified(key)
        if found is None:
            return 0
        entry, handle = found
        with handle:
            capacity = llm.n_ctx()
            tokens = (llama_cpp.llama_token * capacity)()
            count = ctypes.c_size_t(0)
            name = _fd_path(handle, self.directory / entry.state).encode()
            ok = llama_cpp.llama_state_load_file(llm._ctx.ctx, name, tokens, capacity,
                                                 ctypes.byref(count))  # fmt: skip
            n = int(count.value)
            if not ok or n != entry.n_tokens or n == 0 or n > capacity:
                llm._ctx.kv_cache_clear()
                llm.n_tokens = 0
                self._drop(key, entry)
                return 0
            with contextlib.suppress(OSError, NotImplementedError):
                os.utime(handle.fileno())  # recently used: evicted last
        llm.input_ids[:n] = tokens[:n]
        llm.n_tokens = n
        llm._requires_eval = True  # the logits are not live: the next call decodes a token
        return n

    def store(self, llm: Any, key: str) -> bool:
        """Write ``llm``'s state under ``key``; whether it was written (a failure is no error)."""
        import llama_cpp

        n = int(llm.n_tokens)
        if n == 0:
            return False
        try:
            folder = self.folder()
            handle, tmp = tempfile.mkstemp(dir=folder, prefix=".state-", suffix=".tmp")
            os.close(handle)
            tokens = (llama_cpp.llama_token * n)(*[int(t) for t in llm.input_ids[:n]])
            saved = llama_cpp.llama_state_save_file(llm._ctx.ctx, tmp.encode(), tokens, n)
            with open_regular(Path(tmp), follow_symlinks=False) as written:
                digest = _digest(written, self.max_bytes) if saved else None
            if digest is None:  # not saved, or larger than the whole cache may hold
                Path(tmp).unlink(missing_ok=True)
                return False
            sha, size = digest
            name = f"{key[:16]}-{sha[:16]}.state"
            os.replace(tmp, folder / name)
            entry = CacheEntry(format=_FORMAT, key=key, state=name, sha256=sha, size=size,
                               n_tokens=n)  # fmt: skip
            handle, tmp = tempfile.mkstemp(dir=folder, prefix=".record-", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(entry.model_dump_json())
            # two processes storing one key each write their own state: the last record wins
            os.replace(tmp, self._record(key))
        except (OSError, ConfigError):
            return False
        self.evict()
        return True

    def evict(self) -> None:
        """Remove the oldest states until they fit, and any ``*.state`` not a file or folder."""
        try:
            with os.scandir(self.folder()) as found:
                names = [item for item in found if item.name.endswith(".state")]
        except (OSError, ConfigError):
            return
        states: list[tuple[float, int, str]] = []
        for item in names:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                states.append((info.st_mtime, info.st_size, item.path))
            elif not stat.S_ISDIR(info.st_mode):
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
        total = sum(size for _, size, _ in states)
        for _, size, path in sorted(states):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
