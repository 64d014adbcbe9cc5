"""One job's context: its settings, and the clients, store and models it builds on first use."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from bot.chat import ChatModel, ModelRole
from bot.clients.github_port import GitHubPort
from bot.config import Settings
from bot.errors import ConfigError, GitHubError, ModelError, StoreError
from bot.history.github_memory import cached_repo_file, remember_repo_file
from bot.history.protocol import HistoryStore
from bot.policy_file import GatePolicy, policy_from_text
from bot.regular_file import FileTooLarge, NotRegularFile, read_regular, utf8_text
from bot.stores import store_kind
from bot.type_guess import MAX_TYPE_MODEL_BYTES, TypeClassifier, TypeModelLoader

if TYPE_CHECKING:
    from bot.duplicates.title_stage import Encoder

__all__ = [
    "DEFAULT_BRANCH_EVENTS",
    "ConcurrencyRule",
    "GitHubBuilder",
    "JobContext",
    "JobTypeModel",
    "ModelBuilder",
    "StoreBuilder",
    "TitleEncoderLoader",
    "default_branch_commit",
    "store_outlives_job",
]


GitHubBuilder = Callable[..., GitHubPort]
"""``(settings, *, token_required) -> GitHubPort``: :func:`bot.factory.make_github`."""

StoreBuilder = Callable[..., HistoryStore]
"""``(settings, *, read_only) -> HistoryStore``: :func:`bot.factory.make_store`."""

ModelBuilder = Callable[[Settings, ModelRole], ChatModel]
"""``(settings, role) -> ChatModel``: :func:`bot.factory.make_chat_model`."""

ConcurrencyRule = Callable[[Settings], int]
"""``(settings) -> N`` model calls at once: :func:`bot.factory.model_concurrency`."""

TitleEncoderLoader = Callable[[Settings], "Encoder"]
"""``(settings) -> Encoder``, raising :class:`~bot.errors.ModelError` when the title model of
the duplicate ranking is not set up."""


GITHUB_HOSTED = "github-hosted"
"""``RUNNER_ENVIRONMENT`` on a runner GitHub provides, whose disk is gone after the job."""


def store_outlives_job(settings: Settings) -> bool:
    """Whether the job's store is kept after it: PostgreSQL, or a SQLite file on a
    self-hosted runner or at a path the workflow set (one it keeps, a cache say); the default
    SQLite file on a GitHub-hosted runner is not."""
    kind = store_kind(str(settings.db_path)) if settings.db_path else None
    if kind is not None and not kind.on_runner:
        return True
    return settings.runner_environment != GITHUB_HOSTED or "db_path" in settings.explicit


@dataclass(frozen=True)
class JobTypeModel:
    """The job's type model: the classifier, or why there is none though one is configured.

    Attributes:
        source: the file, as output names it (a local path, or a path in the repository).
        classifier: ``None`` when the file could not be read or loaded.
        problem: why not (one line), when ``classifier`` is ``None``.
    """

    source: str
    classifier: TypeClassifier | None
    problem: str | None = None


@dataclass
class _Built:
    make_github: GitHubBuilder
    make_store: StoreBuilder
    make_model: ModelBuilder
    concurrency: ConcurrencyRule
    load_type_model: TypeModelLoader | None = None
    github: GitHubPort | None = None
    store: HistoryStore | None = None
    store_read_only: bool = False
    models: dict[str, ChatModel] = field(default_factory=dict)
    read_repository: Callable[[str], str | None] | None = None
    """Reads a path at the default branch, as the repository file was (set with the file)."""
    type_model: JobTypeModel | None = None
    type_model_read: bool = False
    load_titles: TitleEncoderLoader | None = None
    titles: tuple[Encoder | None, str | None] | None = None


@dataclass(frozen=True)
class JobContext:
    """One job's settings and what it works with; close it (or use ``with``) to close the store."""

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
        load_type_model: TypeModelLoader | None = None,
        load_titles: TitleEncoderLoader | None = None,
    ) -> JobContext:
        """A job's context; nothing is built until it is asked for. Without
        ``load_type_model`` a configured type model is reported unusable; without
        ``load_titles`` duplicates are ranked by their words only."""
        built = _Built(make_github, make_store, make_model, model_concurrency, load_type_model)
        built.load_titles = load_titles
        return cls(settings, built)

    def title_encoder(self) -> tuple[Encoder | None, str | None]:
        """The duplicate ranking's title model (loaded once), or ``None`` and why (one line)."""
        built = self._built
        if built.titles is None:
            if built.load_titles is None:
                built.titles = (None, "no title model in this job")
            else:
                try:
                    built.titles = (built.load_titles(self.settings), None)
                except ModelError as exc:
                    built.titles = (None, str(exc))
        return built.titles

    def github(self) -> GitHubPort:
        """The GitHub client; a dry run needs no token. :exc:`ConfigError`: no token to write."""
        built = self._built
        if built.github is None:
            built.github = built.make_github(
                self.settings, token_required=not self.settings.dry_run
            )
        return built.github

    def store(self, *, read_only: bool = False) -> HistoryStore:
        """The store, read-only on a dry run or when its first caller only reads.

        Raises:
            StoreError: it cannot be opened or migrated, or a newer triage-bot wrote it.
            RuntimeError: a writer asks after it was opened read-only (a bug).
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
        """The chat model for ``role``; no model I/O until its first chat.

        Raises :exc:`ConfigError` if the embedded prompt cache folder is not this user's alone.
        """
        built = self._built
        if role not in built.models:
            built.models[role] = built.make_model(self.settings, role)
        return built.models[role]

    def model_concurrency(self) -> int:
        """How many model calls the job may send at once (≥ 1; 1 for the embedded model)."""
        return self._built.concurrency(self.settings)

    def type_model(self) -> JobTypeModel | None:
        """The type model, read and loaded once per job; ``None`` when none is configured.

        The local ``types_model`` setting wins over the repository file's ``types.model``,
        read at the default branch like the repository file. Never raises: a file that cannot
        be read or loaded is a :class:`JobTypeModel` with its ``problem``.
        """
        built = self._built
        if not built.type_model_read:
            built.type_model = self._read_type_model()
            built.type_model_read = True
        return built.type_model

    def _read_type_model(self) -> JobTypeModel | None:
        settings = self.settings
        types = settings.repo_file.types if settings.repo_file is not None else None
        if settings.types_model is not None:
            source = str(settings.types_model)
            try:
                data = read_regular(settings.types_model, limit=MAX_TYPE_MODEL_BYTES)
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                return JobTypeModel(source, None, f"{source}: cannot be read ({reason})")
        elif types is not None and types.model is not None:
            source = f"{types.model} in the repository"
            read = self._built.read_repository
            if read is None:
                return JobTypeModel(source, None, f"{source}: not read (no GitHub token)")
            try:
                text = read(types.model)
            except (ConfigError, GitHubError, StoreError) as exc:
                return JobTypeModel(source, None, f"{source}: cannot be read ({exc})")
            if text is None:
                return JobTypeModel(
                    source, None, f"{source}: the repository's default branch does not hold it"
                )
            data = text.encode("utf-8")
            if len(data) > MAX_TYPE_MODEL_BYTES:
                return JobTypeModel(
                    source, None, f"{source}: larger than {MAX_TYPE_MODEL_BYTES:,} bytes"
                )
        else:
            return None
        load = self._built.load_type_model
        if load is None:
            return JobTypeModel(source, None, f"{source}: this triage-bot cannot load type models")
        try:
            return JobTypeModel(source, load(data, source))
        except ConfigError as exc:
            return JobTypeModel(source, None, str(exc))

    def with_repository_file(self, repo: str, branch: str | None) -> JobContext:
        """This context with the repository file read once; it shares this one's clients.

        The operator's ``--repo-file`` wins; a dry run without a token reads none. Else it is
        read on ``branch`` (``None``: the default), or in Actions at its commit, kept in the store.

        Raises:
            ConfigError: the file is broken, or no token when the run writes.
            GitHubError / StoreError: the read failed.
        """
        from bot.repo_file import REPO_FILE_PATH, RepoFile, parse_repo_file

        settings = self.settings
        if settings.repo_file is not None:
            return self
        if settings.repo_file_path is not None:  # the operator's file, to try before committing
            if settings.github_token:
                self._built.read_repository = lambda path: self.github().repo_file(
                    repo, path, branch
                )
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

        self._built.read_repository = read
        text = read(REPO_FILE_PATH)
        file = RepoFile() if text is None else parse_repo_file(text)
        settings = settings.with_repository_file(file)
        if settings.gate_policy_path is not None and settings.gate_policy is None:
            settings = replace(settings, repo_policy=_repo_policy(settings.gate_policy_path, read))
        return replace(self, settings=settings)

    def _file_at_commit(self, github: GitHubPort, repo: str, path: str, commit: str) -> str | None:
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
    text = read(path)
    if text is None:
        raise ConfigError(
            f"the gate-policy input names {path}, which the repository's default branch does "
            "not hold (a path from the repository's root)"
        )
    return policy_from_text(text, source=f"{path} in the repository")


DEFAULT_BRANCH_EVENTS = frozenset({"issues", "issue_comment", "schedule", "pull_request_target"})
"""Events whose ``GITHUB_SHA`` is the last commit of ``GITHUB_REF``, never a PR head."""

_COMMIT = re.compile(r"[0-9a-f]{40}")


def default_branch_commit(settings: Settings, branch: str | None) -> str | None:
    """``GITHUB_SHA`` when it provably is a commit of the default branch ``branch``, else None."""
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
    from bot.repo_file import MAX_FILE_CHARS

    try:
        data = read_regular(path, limit=4 * MAX_FILE_CHARS)  # up to 4 bytes a character
    except FileTooLarge:
        raise ConfigError(f"--repo-file {path}: longer than {MAX_FILE_CHARS} characters") from None
    except NotRegularFile as exc:
        raise ConfigError(f"--repo-file {path}: {exc.strerror}") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--repo-file {path}: cannot be read ({reason})") from None
    return utf8_text(data, what="--repo-file", path=path)
