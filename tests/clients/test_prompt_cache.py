"""The embedded backend's prompt cache that outlives the process.

Without a model: what makes an entry trusted (:meth:`PromptCache.entry`: record parses, names a
bare regular file of the recorded size and SHA-256), the size bound, and what another job on a
shared runner can plant: links, FIFOs and devices in place of a record or a state are dropped
without waiting or reading without end; a folder that is not this user's alone is a
ConfigError (exit 2 through the CLI, a FAIL line in the doctor); llama.cpp is handed the file
that was verified, not its name. With the smoke model, each run a fresh process as in the
Action: a second run loads the first's state and evaluates only the issue's tokens; a corrupt or
mismatched entry is rebuilt (evaluated in full); two runs sharing a cold cache folder at once
both succeed.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.clients.prompt_cache import MAX_RECORD_BYTES, CacheEntry, PromptCache
from bot.errors import ConfigError
from tests.support import ROOT

KEY = "ab" * 32


def _entry(folder: Path, data: bytes = b"state bytes", **changes: Any) -> PromptCache:
    """A cache in ``folder`` holding one entry for :data:`KEY`, with its record changed."""
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "s.state").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    record = {"format": 1, "key": KEY, "state": "s.state", "sha256": sha, "size": len(data),
              "n_tokens": 9}  # fmt: skip
    record.update(changes)
    (folder / f"{KEY}.json").write_text(json.dumps(record), "utf-8")
    return PromptCache(folder, max_bytes=1 << 20)


def test_a_matching_entry_is_trusted(tmp_path: Path) -> None:
    entry = _entry(tmp_path).entry(KEY)
    assert isinstance(entry, CacheEntry)
    assert entry.n_tokens == 9


@pytest.mark.parametrize(
    "changes",
    [
        {"sha256": "0" * 64},  # the file is not what was recorded (corrupt, or another writer's)
        {"size": 5},
        {"state": "../elsewhere.state"},  # a record never points outside the folder
        {"state": "missing.state"},
        {"key": "cd" * 32},  # another key's record under this name
        {"format": 2},
        {"n_tokens": "9"},  # strict: a wrong type is a broken record
        {"extra": 1},
    ],
)
def test_a_mismatched_entry_is_deleted_never_trusted(tmp_path: Path, changes: Any) -> None:
    cache = _entry(tmp_path, **changes)
    assert cache.entry(KEY) is None
    assert not (tmp_path / f"{KEY}.json").exists()


def test_an_unreadable_record_is_deleted(tmp_path: Path) -> None:
    cache = _entry(tmp_path)
    (tmp_path / f"{KEY}.json").write_bytes(b"\x00{not json")
    assert cache.entry(KEY) is None
    assert not (tmp_path / f"{KEY}.json").exists()
    assert cache.entry("ef" * 32) is None  # no record at all: nothing to trust, nothing raised


def test_the_folder_keeps_to_its_size_bound_oldest_first(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path, max_bytes=2500)
    for age, name in enumerate(("old", "mid", "new")):
        path = tmp_path / f"{name}.state"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    cache.evict()
    assert sorted(p.name for p in tmp_path.glob("*.state")) == ["mid.state", "new.state"]


def test_the_key_covers_the_model_file_the_context_and_the_prompt(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" * 10)
    key = PromptCache.key(gguf, 4096, "system")
    assert key == PromptCache.key(gguf, 4096, "system")
    assert key != PromptCache.key(gguf, 8192, "system")
    assert key != PromptCache.key(gguf, 4096, "system.")
    gguf.write_bytes(b"GGUF" * 11)  # a new file at the same path
    assert key != PromptCache.key(gguf, 4096, "system")


# --- what another job on the runner can plant -------------------------------------------------
def _within(seconds: float, call: Callable[[], Any], unblock: Path | None = None) -> Any:
    """``call()``'s result, run in a thread given ``seconds``; still running then fails the
    test (a FIFO at ``unblock`` is opened for writing and closed, so a blocked open ends)."""
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            with contextlib.suppress(OSError):
                os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"still running after {seconds} s")
    assert outcome, "the call raised (see the thread's traceback above)"
    return outcome[0]


def _record(folder: Path, data: bytes, **changes: Any) -> bytes:
    record = {"format": 1, "key": KEY, "state": "s.state", "n_tokens": 9,
              "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}  # fmt: skip
    record.update(changes)
    return json.dumps(record).encode()


def _plant(folder: Path, where: str, what: str, data: bytes) -> Path:
    """Put ``what`` at the record's (``where="record"``) or the state's name; the other is a
    valid entry for ``data``. Returns the planted path."""
    folder.mkdir(mode=0o700, exist_ok=True)
    record, state = folder / f"{KEY}.json", folder / "s.state"
    planted = record if where == "record" else state
    elsewhere = folder.parent / f"elsewhere-{where}"
    if where == "record":
        state.write_bytes(data)
        elsewhere.write_bytes(_record(folder, data))
    else:
        record.write_bytes(_record(folder, data))
        elsewhere.write_bytes(data)
    if what == "fifo":
        os.mkfifo(planted)
    elif what == "link to /dev/zero":
        planted.symlink_to("/dev/zero")
    elif what == "link to a matching file outside":
        planted.symlink_to(elsewhere)
    elif what == "folder":
        planted.mkdir()
    elif what == "long":  # valid JSON padded past the record's bound
        planted.write_bytes(_record(folder, data) + b" " * MAX_RECORD_BYTES)
    return planted


@pytest.mark.parametrize(
    ("where", "what"),
    [
        ("record", "link to /dev/zero"),  # read without end: MemoryError
        ("record", "fifo"),  # blocks the open until a writer comes
        ("record", "link to a matching file outside"),
        ("record", "folder"),
        ("record", "long"),
        ("state", "link to /dev/zero"),
        ("state", "fifo"),
        ("state", "link to a matching file outside"),
        ("state", "folder"),
    ],
)
@pytest.mark.parametrize("data", [b"", b"state bytes"])  # size 0: what /dev/zero and a FIFO stat
def test_a_planted_non_file_is_dropped_never_waited_on_nor_read_without_end(
    tmp_path: Path, where: str, what: str, data: bytes
) -> None:
    folder = tmp_path / "cache"
    planted = _plant(folder, where, what, data)
    cache = PromptCache(folder, max_bytes=1 << 20)
    assert _within(10, lambda: cache.entry(KEY), unblock=planted) is None
    assert not (folder / f"{KEY}.json").is_symlink()  # a planted record link is removed
    if what != "folder":
        assert not os.path.lexists(planted)


def test_eviction_survives_dangling_links_and_odd_entries(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    for age, name in enumerate(("old", "mid", "new")):
        path = folder / f"{name}.state"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    (folder / "0-dangling.state").symlink_to(tmp_path / "gone")
    (folder / "1-zero.state").symlink_to("/dev/zero")
    os.mkfifo(folder / "2-pipe.state")
    (folder / "3-folder.state").mkdir()
    _within(10, PromptCache(folder, max_bytes=2500).evict)
    assert sorted(os.listdir(folder)) == ["3-folder.state", "mid.state", "new.state"]


def _fake_llama(monkeypatch: pytest.MonkeyPatch, load: Callable[[bytes], bytes]) -> list[bytes]:
    """A stand-in for llama_cpp's state functions: ``load(path)`` gives what llama.cpp would
    read at ``path``; returns the list of what was read."""
    read: list[bytes] = []

    def load_file(ctx: Any, path: bytes, tokens: Any, capacity: int, count: Any) -> bool:
        read.append(load(path))
        count._obj.value = 9
        return True

    def save_file(ctx: Any, path: bytes, tokens: Any, n: int) -> bool:
        Path(path.decode()).write_bytes(b"saved state")
        return True

    module = types.SimpleNamespace(
        llama_token=ctypes.c_int32, llama_state_load_file=load_file,
        llama_state_save_file=save_file,
    )  # fmt: skip
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    return read


class _FakeLlm:
    def __init__(self) -> None:
        self.n_tokens = 4
        self.input_ids = [1, 2, 3, 4] + [0] * 12
        self._ctx = types.SimpleNamespace(ctx=None, kv_cache_clear=lambda: None)

    def n_ctx(self) -> int:
        return 16


def test_llama_cpp_loads_the_verified_file_even_when_its_name_is_swapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    cache = _entry(folder, b"verified state")
    folder.chmod(0o700)
    other = tmp_path / "other"
    other.write_bytes(b"swapped in after the check")

    def load(path: bytes) -> bytes:
        os.replace(other, folder / "s.state")  # between the check and llama.cpp's open
        return Path(path.decode()).read_bytes()

    read = _fake_llama(monkeypatch, load)
    assert cache.restore(_FakeLlm(), KEY) == 9
    assert read == [b"verified state"]


_MODES = st.integers(0, 0o777).map(lambda m: m | 0o700)  # the owner can always use it


@settings(max_examples=60, deadline=None)
@given(mode=_MODES)
def test_a_folder_others_may_write_is_refused_one_they_may_read_is_tightened(mode: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cache"
        planted = _entry(folder)  # a matching entry someone put there
        folder.chmod(mode)
        if mode & 0o022:
            with pytest.raises(ConfigError, match="writable by its group or others"):
                planted.entry(KEY)
            assert stat.S_IMODE(folder.stat().st_mode) == mode  # left as it is
        else:
            assert planted.entry(KEY) is not None  # only this user could have written it
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_refused_folder_is_neither_written_nor_evicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    cache = _entry(folder)
    folder.chmod(0o777)
    _fake_llama(monkeypatch, lambda path: b"")
    assert cache.store(_FakeLlm(), "cd" * 32) is False
    cache.max_bytes = 1
    cache.evict()
    assert sorted(os.listdir(folder)) == sorted(["s.state", f"{KEY}.json"])
    with pytest.raises(ConfigError):
        cache.restore(_FakeLlm(), KEY)


def test_a_new_folder_is_created_private_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "a" / "b" / "cache"
    old = os.umask(0o002)  # a umask that would leave it group-writable
    try:
        cache = PromptCache(folder, max_bytes=1 << 20)
        _fake_llama(monkeypatch, lambda path: b"")
        assert cache.store(_FakeLlm(), KEY) is True
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    entry = cache.entry(KEY)
    assert entry is not None
    assert entry.size == len(b"saved state")
    assert stat.S_IMODE((folder / entry.state).stat().st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_folder_of_another_user_is_refused_even_when_private(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = _entry(folder)
    folder.chmod(0o700)
    os.chown(folder, 4242, -1)
    with pytest.raises(ConfigError, match="belongs to uid 4242, not to this runner's user"):
        cache.entry(KEY)


def test_a_file_where_the_folder_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("not a folder")
    with pytest.raises(ConfigError, match="prompt cache folder"):
        PromptCache(tmp_path / "cache", max_bytes=1 << 20).folder()


def test_a_planted_entry_of_this_user_is_trusted_what_the_folder_cannot_prevent(
    tmp_path: Path,
) -> None:
    """Another process of the same user writes the folder as the bot does: a state planted
    with a matching record is loaded. Only a user of its own protects the cache (README,
    Security)."""
    folder = tmp_path / "cache"
    cache = _entry(folder, b"planted by another job of this user")
    folder.chmod(0o700)
    assert cache.entry(KEY) is not None


def test_the_run_exits_2_before_any_model_work_on_a_folder_others_may_write(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o777)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")  # never loaded: the folder is refused before the first call
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(ROOT / "examples" / "issues.opened.json"),
        "TRIAGE_PROMPT_CACHE": str(folder),
        "TRIAGE_MODEL_PATH": str(gguf),
    }
    result = CliRunner().invoke(main, ["run", "--dry-run"], env=env)
    assert result.exit_code == 2, result.output
    assert f"prompt cache folder {folder} is writable by its group or others" in result.stderr
    assert "verdict:" not in result.output


# --- with the smoke model, each run a fresh process -------------------------------------------
ONE_RUN = """
import json, secrets, sys
from pathlib import Path
from bot.clients.embedded import EmbeddedChatModel, smoke_model_path, _prompt_eval_tokens
from bot.clients.prompt_cache import PromptCache
from bot.config import EMBEDDED_N_CTX, VALIDATOR_OPTIONS
from bot.gate.validator import Validator
cache = None if sys.argv[1] == "none" else PromptCache(Path(sys.argv[1]), max_bytes=64 << 20)
secrets.token_hex = lambda nbytes: sys.argv[2]  # the issue's tag id: this run's own
model = EmbeddedChatModel(model_path=smoke_model_path(), n_ctx=EMBEDDED_N_CTX, prompt_cache=cache)
d = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000).judge(
    "Export fails on an empty file",
    "I run `tool export --csv empty.csv` on 2.3.1 and it exits with KeyError: 'id'. "
    "It should write an empty out.csv with the header row.",
)
print(json.dumps({"verdict": d.verdict, "model_verdict": d.model_verdict, "error": d.error_kind,
                  "prompt": d.prompt_tokens, "output": d.output_tokens,
                  "evaluated": _prompt_eval_tokens(model._llm())}))
"""

_RUNS = itertools.count()


def _start(cache: Path | str) -> subprocess.Popen[str]:
    """One gate call in a fresh process. Each run delimits the issue with a tag id of its own
    (a prompt differs from the cached one after the system prompt, as it does in use), taken
    from a fixed sequence so the suite sends the same prompts on every run."""
    nonce = f"{next(_RUNS) * 0x9E3779B1 % (1 << 32):08x}"
    return subprocess.Popen(
        [sys.executable, "-c", ONE_RUN, str(cache), nonce],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _finish(run: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-2000:]
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _run(cache: Path | str) -> dict[str, Any]:
    return _finish(_start(cache))


@pytest.mark.model
def test_a_second_process_evaluates_only_the_issue_and_a_bad_entry_is_rebuilt(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cache"
    without = _run("none")
    cold = _run(folder)
    assert cold["evaluated"] == cold["prompt"]  # nothing to reuse yet: the whole prompt
    (record,) = folder.glob("*.json")
    warm = _run(folder)
    assert warm["evaluated"] < cold["prompt"] / 4  # the issue's tokens and the turn markers
    # the cache changes which tokens are evaluated, not what comes back: every run gets the
    # model's reply (a 270M model's reply may itself be a fault: invalid JSON, a copied reason)
    for run in (without, cold, warm):
        _answered(run)

    (state,) = folder.glob("*.state")
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle of the saved KV cache
    state.write_bytes(bytes(data))
    rebuilt = _run(folder)
    assert rebuilt["evaluated"] == rebuilt["prompt"]  # not trusted: evaluated in full
    _answered(rebuilt)
    assert json.loads(record.read_text("utf-8"))["sha256"] != _sha(data)  # written anew

    record.write_text(record.read_text("utf-8").replace('"format":1', '"format":7'), "utf-8")
    again = _run(folder)
    assert again["evaluated"] == again["prompt"]  # the prompt's nonce varies by a token or two
    assert _run(folder)["evaluated"] < again["prompt"] / 4  # and reused again after that


MODEL_OUTPUT_FAULTS = (None, "unparseable", "truncated", "copied_from_issue")
"""What a run may end in once the model has replied: a verdict, or a fault of the reply."""


def _answered(run: dict[str, Any]) -> None:
    """The run reached the model and read its reply: never a load or cache fault."""
    assert run["output"] > 0, run
    assert run["error"] in MODEL_OUTPUT_FAULTS, run
    assert (run["verdict"] is None) == (run["error"] is not None), run


def _sha(data: bytes | bytearray) -> str:
    import hashlib

    return hashlib.sha256(bytes(data)).hexdigest()


@pytest.mark.model
def test_two_runs_sharing_a_cold_cache_folder_both_succeed(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    first, second = _start(folder), _start(folder)
    results = [_finish(first), _finish(second)]
    for result in results:
        _answered(result)
    assert len(list(folder.glob("*.json"))) == 1  # one record: the last writer's
    assert _run(folder)["evaluated"] < results[0]["prompt"] / 4  # and it is a valid one
