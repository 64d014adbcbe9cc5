"""One job's context: its settings, with the repository's own file read once, and what the job
works with (the GitHub client, the store, the chat models, how many model calls may run at
once), each built at most once, when first asked for. The runner builds it with the builders of
:mod:`bot.factory` and hands it to a pipeline or to the comment commands, so nothing below the
runner builds a client, a store or a model, and one job's clients come from one place.

The repository file, ``.github/triage-bot.yml``, is read from the default branch through the
API (never a PR head), at the default branch's commit in Actions (kept per commit in the store:
:mod:`bot.history.github_memory`), or from a local file the operator names; what it sets is
layered under flags, inputs and variables (:meth:`bot.config.Settings.with_repository_file`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from bot.chat import ChatModel, ModelRole
from bot.clients.github_port import GitHubPort
from bot.config import Settings
from bot.errors import ConfigError, StoreError
from bot.gate_policy import GatePolicy, policy_from_text
from bot.history.github_memory import cached_repo_file, remember_repo_file
from bot.history.protocol import HistoryStore
from bot.regular_file import FileTooLarge, NotRegularFile, read_regular, utf8_text

__all__ = [
    "DEFAULT_BRANCH_EVENTS",
    "ConcurrencyRule",
    "GitHubBuilder",
    "JobContext",
    "ModelBuilder",
    "StoreBuilder",
    "default_branch_commit",
]


GitHubBuilder = Callable[..., GitHubPort]
"""``(settings, *, token_required) -> GitHubPort``: :func:`bot.factory.make_github`."""

StoreBuilder = Callable[..., HistoryStore]
"""``(settings, *, read_only) -> HistoryStore``: :func:`bot.factory.make_store`."""

ModelBuilder = Callable[[Settings, ModelRole], ChatModel]
"""``(settings, role) -> ChatModel``: :func:`bot.factory.make_chat_model`."""

ConcurrencyRule = Callable[[Settings], int]
"""``(settings) -> N``, the model calls the backend takes at once:
:func:`bot.factory.model_concurrency`."""


@dataclass
class _Built:
    """What one job has built so far, shared by every view of its settings."""

    make_github: GitHubBuilder
    make_store: StoreBuilder
    make_model: ModelBuilder
    concurrency: ConcurrencyRule
    github: GitHubPort | None = None
    store: HistoryStore | None = None
    store_read_only: bool = False
    models: dict[str, ChatModel] = field(default_factory=dict)


@dataclass(frozen=True)
class JobContext:
    """One job's settings and what it works with (module doc).

    Use it as a context manager, or call :meth:`close`: the store is closed when the job ends.

    Attributes:
        settings: the job's frozen settings; with the repository file once
            :meth:`with_repository_file` has read it.
    """

    settings: Settings
    _built: _Built

    @classmethod
    def build(
        cls,
        settings: Settings,
        *,
        make_github: GitHubBuilder,
        make_store: StoreBuilder,
        make_model: ModelBuilder,
        model_concurrency: ConcurrencyRule,
    ) -> JobContext:
        """A job's context over these settings; nothing is built until it is asked for."""
        return cls(settings, _Built(make_github, make_store, make_model, model_concurrency))

    def github(self) -> GitHubPort:
        """The GitHub client, built on the first call. A dry run needs no token (public
        repositories can be read without one, at GitHub's low anonymous rate limit).

        Raises:
            ConfigError: no token, and the run writes.
        """
        built = self._built
        if built.github is None:
            built.github = built.make_github(
                self.settings, token_required=not self.settings.dry_run
            )
        return built.github

    def store(self, *, read_only: bool = False) -> HistoryStore:
        """The store, opened on the first call: read-only on a dry run or when that first
        caller only reads (a missing file then reads as empty and is not created).

        Raises:
            StoreError: the store cannot be opened or migrated, or a newer triage-bot wrote it.
            RuntimeError: a caller that writes asks after the store was opened read-only (a
                bug: a job that writes opens its store for writing first).
        """
        built = self._built
        read_only = read_only or self.settings.dry_run
        if built.store is None:
            built.store = built.make_store(self.settings, read_only=read_only)
            built.store_read_only = read_only
        elif built.store_read_only and not read_only:
            raise RuntimeError("the job's store was opened read-only and is asked to write")
        return built.store

    def model(self, role: ModelRole) -> ChatModel:
        """The chat model for ``role``, built on the first call from these settings (no model
        I/O until its first chat).

        Raises:
            ConfigError: the embedded backend's prompt cache folder is not this user's alone.
        """
        built = self._built
        if role not in built.models:
            built.models[role] = built.make_model(self.settings, role)
        return built.models[role]

    def model_concurrency(self) -> int:
        """How many model calls the job may send at once (≥ 1): ``model_concurrency`` for a
        server backend, 1 for the embedded model (the rule the runner gives)."""
        return self._built.concurrency(self.settings)

    def with_repository_file(self, repo: str, branch: str | None) -> JobContext:
        """This context with the repository's file as its settings' file layer, read once:
        none when the settings already carry it. With ``--repo-file`` / ``TRIAGE_REPO_FILE``
        (``Settings.repo_file_path``) the operator's local file is read, with no request. A dry
        run without a GitHub token (a maintainer trying the bot locally, perhaps offline) reads
        no file: it plans with the bot's defaults and the flags and variables given. Otherwise
        one ``GET .../contents/...`` on ``branch`` (the payload's
        ``repository.default_branch``; ``None``: the repository's default), or, in Actions, at
        the default branch's commit (:func:`default_branch_commit`), which the store keeps: what
        a commit holds never changes, so every later run at that commit reads the store, not
        GitHub, until the branch moves. No file: the settings as they are, with an empty file,
        so it is not read again. The new context shares this one's clients.

        Raises:
            ConfigError: the file is broken (:func:`bot.repo_file.parse_repo_file`: key and
                line), or no token when the run writes.
            GitHubError: the read failed.
            StoreError: the store cannot be opened (only when a commit is read).
        """
        from bot.repo_file import REPO_FILE_PATH, RepoFile, parse_repo_file

        settings = self.settings
        if settings.repo_file is not None:
            return self
        if settings.repo_file_path is not None:  # the operator's file, to try before committing
            local = _read_local_file(settings.repo_file_path)
            parsed = parse_repo_file(local, source=f"--repo-file {settings.repo_file_path}")
            return replace(self, settings=settings.with_repository_file(parsed))
        if settings.dry_run and not settings.github_token:
            return self
        github = self.github()
        commit = default_branch_commit(settings, branch)

        def read(path: str) -> str | None:
            if commit is None:
                return github.repo_file(repo, path, branch)
            return self._file_at_commit(github, repo, path, commit)

        text = read(REPO_FILE_PATH)
        file = RepoFile() if text is None else parse_repo_file(text)
        settings = settings.with_repository_file(file)
        if settings.gate_policy_path is not None and settings.gate_policy is None:
            settings = replace(settings, repo_policy=_repo_policy(settings.gate_policy_path, read))
        return replace(self, settings=settings)

    def _file_at_commit(self, github: GitHubPort, repo: str, path: str, commit: str) -> str | None:
        """The file at ``commit``: from the store when it was read at that commit, else read
        (``GET .../contents/{path}?ref={commit}``) and kept unless the run is dry."""
        store = self.store()
        cached = cached_repo_file(store, repo, path, commit)
        if cached is not None:
            return cached.text
        text = github.repo_file(repo, path, commit)
        if not self.settings.dry_run:
            with contextlib.suppress(StoreError):  # only costs the next run the read
                remember_repo_file(store, repo, path, commit, text)
        return text

    def close(self) -> None:
        """Close the store if the job opened it."""
        built = self._built
        if built.store is not None:
            store, built.store = built.store, None
            store.close()

    def __enter__(self) -> JobContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _repo_policy(path: str, read: Callable[[str], str | None]) -> GatePolicy:
    """The policy file at ``path`` in the repository.

    Raises:
        ConfigError: the default branch holds no such file, or it is not a policy.
    """
    text = read(path)
    if text is None:
        raise ConfigError(
            f"the gate-policy input names {path}, which the repository's default branch does "
            "not hold (a path from the repository's root)"
        )
    return policy_from_text(text, source=f"{path} in the repository")


DEFAULT_BRANCH_EVENTS = frozenset({"issues", "issue_comment", "schedule", "pull_request_target"})
"""Events for which Actions sets ``GITHUB_SHA`` to the last commit of the branch in
``GITHUB_REF``: the default branch for the first three, the PR's base branch for
``pull_request_target`` (docs.github.com, "Events that trigger workflows"); never a PR head."""

_COMMIT = re.compile(r"[0-9a-f]{40}")


def default_branch_commit(settings: Settings, branch: str | None) -> str | None:
    """``GITHUB_SHA`` when it provably is a commit of the default branch ``branch`` (the
    payload's), else ``None``: the event is one of :data:`DEFAULT_BRANCH_EVENTS`, ``GITHUB_REF``
    is ``refs/heads/<branch>`` and the SHA is 40 hex digits. A ``pull_request_target`` run on
    a PR into another branch, a run outside Actions, or no branch named: ``None``."""
    sha = settings.commit_sha or ""
    if (
        branch
        and settings.event_name in DEFAULT_BRANCH_EVENTS
        and settings.git_ref == f"refs/heads/{branch}"
        and _COMMIT.fullmatch(sha)
    ):
        return sha
    return None


def _read_local_file(path: Path) -> str:
    """A local repository file's text: a regular file (:mod:`bot.regular_file`), read no
    further than the longest file :func:`bot.repo_file.parse_repo_file` accepts could be.

    Raises:
        ConfigError: unreadable, not a regular file, too long, or not UTF-8.
    """
    from bot.repo_file import MAX_FILE_CHARS

    try:
        data = read_regular(path, limit=4 * MAX_FILE_CHARS)
    except FileTooLarge:
        raise ConfigError(f"--repo-file {path}: longer than {MAX_FILE_CHARS} characters") from None
    except NotRegularFile as exc:
        raise ConfigError(f"--repo-file {path}: {exc.strerror}") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--repo-file {path}: cannot be read ({reason})") from None
    return utf8_text(data, what="--repo-file", path=path)
