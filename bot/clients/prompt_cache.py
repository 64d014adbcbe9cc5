"""A prompt cache for the embedded backend that outlives the process.

Rule source: issue 19, "A prompt cache that outlives the process". Each event is a fresh
process, so without this every run evaluates the whole system prompt again (Ollama keeps its
cache between requests; llama-cpp-python keeps it only between calls of one process).

What is kept: after the first call of a process with a given system prompt, llama.cpp's state
(its KV cache and the tokens it holds, ``llama_state_save_file``) is written to the cache folder
under a key of everything that makes that state valid: the GGUF (resolved path, size, mtime),
llama-cpp-python's version, the context size and the system message's text. The next process
with the same key loads it (``llama_state_load_file``) before its first call; llama-cpp-python
then finds the longest token prefix the new prompt shares with the loaded tokens (the system
prompt and the turn markers) and evaluates only the rest, exactly as it does between two calls
of one process. Only a token-exact prefix is ever reused, so a loaded state can only save work.

Never trusted: each entry is a state file named by its SHA-256 and a small JSON record (a
pydantic model) naming the file, its size, hash and token count, written last and atomically
(``os.replace``). An entry whose record does not parse, whose file is missing or has another
hash or size, or that llama.cpp refuses, is deleted and rebuilt from a full evaluation; two
processes writing the same key at once each write their own file and the last record wins.
The folder is kept under a size bound (oldest files removed first).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["CacheEntry", "PromptCache"]

_FORMAT = 1


class CacheEntry(BaseModel):
    """The JSON record of one cached state (``<key>.json``).

    Attributes:
        format: this module's record format (:data:`_FORMAT`).
        key: the entry's key (:meth:`PromptCache.key`).
        state: the state file's name in the folder.
        sha256: the state file's SHA-256 (hex).
        size: the state file's size (bytes).
        n_tokens: the tokens the state holds.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: int
    key: str
    state: str
    sha256: str
    size: int
    n_tokens: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PromptCache:
    """llama.cpp states on disk, one per key (see the module docstring).

    Args:
        directory: the cache folder (created when first written).
        max_bytes: the folder's size bound (bytes); after a write, the oldest state files are
            removed until the rest fit.
    """

    def __init__(self, directory: Path, *, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    @staticmethod
    def key(model_path: Path, n_ctx: int, prefix: str) -> str:
        """The key of a state: SHA-256 (hex) over the GGUF's resolved path, size and mtime
        (ns), llama-cpp-python's version, the context size (tokens) and ``prefix`` (the
        system message's text).

        Raises:
            OSError: the GGUF cannot be stat'ed.
        """
        stat = model_path.resolve().stat()
        try:
            version = metadata.version("llama_cpp_python")
        except metadata.PackageNotFoundError:
            version = "unknown"
        parts = [str(model_path.resolve()), str(stat.st_size), str(stat.st_mtime_ns), version,
                 str(n_ctx), prefix]  # fmt: skip
        return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()

    def _record(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _drop(self, key: str, entry: CacheEntry | None = None) -> None:
        with contextlib.suppress(OSError):
            self._record(key).unlink()
        if entry is not None:
            with contextlib.suppress(OSError):
                (self.directory / entry.state).unlink()

    def entry(self, key: str) -> CacheEntry | None:
        """The key's entry when its record parses and its state file matches it (name, size,
        SHA-256); otherwise ``None``, and what was there is deleted."""
        record = self._record(key)
        try:
            entry = CacheEntry.model_validate_json(record.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError):
            self._drop(key)
            return None
        state = self.directory / entry.state
        named = Path(entry.state).name == entry.state  # a bare name: never a path elsewhere
        valid = entry.format == _FORMAT and entry.key == key and named
        try:
            valid = valid and state.stat().st_size == entry.size and _sha256(state) == entry.sha256
        except OSError:
            valid = False
        if not valid:
            self._drop(key, entry)
            return None
        return entry

    def restore(self, llm: Any, key: str) -> int:
        """Load the key's state into ``llm`` (a ``llama_cpp.Llama``); the tokens restored, or 0
        when there is no valid entry (a bad one is deleted and ``llm`` left empty)."""
        import llama_cpp

        entry = self.entry(key)
        if entry is None:
            return 0
        capacity = llm.n_ctx()
        tokens = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        state = str(self.directory / entry.state).encode()
        ok = llama_cpp.llama_state_load_file(llm._ctx.ctx, state, tokens, capacity,
                                             ctypes.byref(count))  # fmt: skip
        n = int(count.value)
        if not ok or n != entry.n_tokens or n == 0 or n > capacity:
            llm._ctx.kv_cache_clear()
            llm.n_tokens = 0
            self._drop(key, entry)
            return 0
        llm.input_ids[:n] = tokens[:n]
        llm.n_tokens = n
        llm._requires_eval = True  # the logits are not live: the next call decodes a token
        with contextlib.suppress(OSError):
            os.utime(self.directory / entry.state)  # recently used: evicted last
        return n

    def store(self, llm: Any, key: str) -> bool:
        """Write ``llm``'s current state under ``key`` (see the module docstring); whether it
        was written. A failure to write is not an error: the run goes on without the cache."""
        import llama_cpp

        n = int(llm.n_tokens)
        if n == 0:
            return False
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=self.directory, prefix=".state-", suffix=".tmp")
            os.close(handle)
            tokens = (llama_cpp.llama_token * n)(*[int(t) for t in llm.input_ids[:n]])
            if not llama_cpp.llama_state_save_file(llm._ctx.ctx, tmp.encode(), tokens, n):
                Path(tmp).unlink(missing_ok=True)
                return False
            sha = _sha256(Path(tmp))
            name = f"{key[:16]}-{sha[:16]}.state"
            os.replace(tmp, self.directory / name)
            entry = CacheEntry(format=_FORMAT, key=key, state=name, sha256=sha,
                               size=(self.directory / name).stat().st_size, n_tokens=n)  # fmt: skip
            handle, tmp = tempfile.mkstemp(dir=self.directory, prefix=".record-", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(entry.model_dump_json())
            os.replace(tmp, self._record(key))
        except OSError:
            return False
        self.evict()
        return True

    def evict(self) -> None:
        """Remove the oldest state files (by mtime) until the folder's states fit
        :attr:`max_bytes`; a record left without its state is dropped when next read."""
        try:
            states = sorted(self.directory.glob("*.state"), key=lambda p: p.stat().st_mtime)
            total = sum(p.stat().st_size for p in states)
        except OSError:
            return
        for path in states:
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                size = path.stat().st_size
                path.unlink()
                total -= size
