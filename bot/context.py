"""The repository's own file for one job: read once, layered under the job's settings.

Rule source: design.md, "Per repository" and issue 16. ``.github/triage-bot.yml`` is read from
the default branch through the API (never a PR head), at the default branch's commit in Actions
(kept per commit in the store, :mod:`bot.history.github_memory`), or from a local file the
operator names; what it sets is merged under flags, inputs and variables
(:meth:`bot.config.Settings.with_repository_file`). The runner asks here for the settings, the
gate labels and the skip rules of a job.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path

from bot import factory
from bot.clients.github_port import GitHubPort
from bot.config import Settings
from bot.errors import ConfigError, StoreError
from bot.events import IssuesEvent
from bot.gate.labels import DEFAULT_LABELS, GateLabel, GateLabels
from bot.history.github_memory import cached_repo_file, remember_repo_file
from bot.history.protocol import HistoryStore
from bot.regular_file import FileTooLarge, NotRegularFile, read_regular

__all__ = [
    "DEFAULT_BRANCH_EVENTS",
    "author_intro",
    "default_branch_commit",
    "gate_labels",
    "skip_reason",
    "with_repository_file",
]


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


GitHubFactory = Callable[..., GitHubPort]
StoreFactory = Callable[..., HistoryStore]


def with_repository_file(
    settings: Settings,
    repo: str,
    branch: str | None,
    github: GitHubPort | None = None,
    *,
    make_github: GitHubFactory = factory.make_github,
    make_store: StoreFactory = factory.make_store,
) -> Settings:
    """The settings with the repository's ``.github/triage-bot.yml`` as their file layer
    (:meth:`Settings.with_repository_file`), read once per run: one
    ``GET .../contents/...`` on ``branch`` (the payload's ``repository.default_branch``; never
    a PR head), none when ``settings`` already carry the file. No file: the settings as they
    are (with an empty file, so it is not read again). A dry run without a GitHub token (the
    README's first command, a maintainer trying the bot locally, perhaps offline) reads no
    file: it plans with the bot's defaults and the flags and variables given. With
    ``--repo-file`` / ``TRIAGE_REPO_FILE`` (``Settings.repo_file_path``) the operator's local
    file is read instead, with no request.

    In Actions the read names the commit instead (:func:`default_branch_commit`: the default
    branch's last commit, ``GITHUB_SHA``), and the store keeps what it read
    (:mod:`bot.history.github_memory`): what a commit holds never changes, so every later run
    at that commit reads the store, not GitHub, until the branch moves.

    Args:
        github: the client to read with; built with ``make_github`` when ``None`` and a read
            is due. ``make_github`` / ``make_store``: how the caller builds its clients (the
            runner passes its own, so one job's clients come from one place).

    Raises:
        ConfigError: the file is broken (:func:`bot.repo_file.parse_repo_file`: key and line).
        GitHubError: the read failed.
        StoreError: the store cannot be opened (only when a commit is read).
    """
    from bot.repo_file import REPO_FILE_PATH, RepoFile, parse_repo_file

    if settings.repo_file is not None:
        return settings
    if settings.repo_file_path is not None:  # the operator's file, to try before committing
        local = _read_local_file(settings.repo_file_path)
        return settings.with_repository_file(parse_repo_file(local))
    if settings.dry_run and not settings.github_token:
        return settings
    if github is None:
        github = make_github(settings, token_required=not settings.dry_run)
    commit = default_branch_commit(settings, branch)
    if commit is None:
        text = github.repo_file(repo, REPO_FILE_PATH, branch)
    else:
        text = _file_at_commit(settings, github, repo, REPO_FILE_PATH, commit, make_store)
    return settings.with_repository_file(RepoFile() if text is None else parse_repo_file(text))


def _read_local_file(path: Path) -> str:
    """A local repository file's text: a regular file (:mod:`bot.regular_file`), read no
    further than the longest file :func:`bot.repo_file.parse_repo_file` accepts could be.

    Raises:
        ConfigError: unreadable, not a regular file, too long, or not UTF-8.
    """
    from bot.repo_file import MAX_FILE_CHARS

    try:
        return read_regular(path, limit=4 * MAX_FILE_CHARS).decode("utf-8")
    except FileTooLarge:
        raise ConfigError(f"--repo-file {path}: longer than {MAX_FILE_CHARS} characters") from None
    except NotRegularFile as exc:
        raise ConfigError(f"--repo-file {path}: {exc.strerror}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--repo-file {path}: cannot be read ({exc})") from None


def _file_at_commit(
    settings: Settings,
    github: GitHubPort,
    repo: str,
    path: str,
    commit: str,
    make_store: StoreFactory,
) -> str | None:
    """The file at ``commit``: from the store when it was read at that commit, else read
    (``GET .../contents/{path}?ref={commit}``) and kept unless the run is dry."""
    store = make_store(settings, read_only=settings.dry_run)
    try:
        cached = cached_repo_file(store, repo, path, commit)
        if cached is not None:
            return cached.text
        text = github.repo_file(repo, path, commit)
        if not settings.dry_run:
            with contextlib.suppress(StoreError):  # only costs the next run the read
                remember_repo_file(store, repo, path, commit, text)
        return text
    finally:
        store.close()


def gate_labels(settings: Settings) -> GateLabels:
    """The repository's three gate labels: the bot's, with what its file's ``labels:`` sets.

    Raises:
        ConfigError: two of the three would share a name (GitHub compares names
            case-insensitively).
    """
    if settings.repo_file is None:
        return DEFAULT_LABELS
    given = settings.repo_file.labels
    merged = GateLabels(
        *(
            GateLabel(
                cfg.name or base.name,
                (cfg.color or base.color).lower(),
                base.description if cfg.description is None else cfg.description,
            )
            for cfg, base in zip(
                (given.ready, given.needs_refinement, given.validator_error),
                DEFAULT_LABELS.all,
                strict=True,
            )
        )
    )
    names = [label.name.lower() for label in merged.all]
    if len(set(names)) != len(names):
        raise ConfigError(
            ".github/triage-bot.yml: labels: the three gate labels need three different names"
        )
    return merged


def author_intro(settings: Settings) -> str | None:
    """The repository file's intro line for the author comment, or ``None``."""
    return settings.repo_file.author_comment.intro if settings.repo_file else None


def skip_reason(event: IssuesEvent, settings: Settings) -> str | None:
    """Why the repository file's skip rules leave this issue alone, or ``None``."""
    if settings.repo_file is None:
        return None
    issue = event.issue
    return settings.repo_file.skip.reason(
        title=issue.title,
        labels=issue.label_names,
        author=issue.user.login if issue.user else None,
        author_type=issue.user.type if issue.user else None,
    )
