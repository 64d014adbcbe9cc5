"""``/duplicates``: the earlier issues most like this one, from the store's index (no model
call), and ``/duplicates dismiss``, a maintainer's dismissal of the issue's suggestions.

Candidates are checked on GitHub in one request before they are named: a deleted or
transferred one is dropped from the index, a locked one only left out of the reply.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.clients.issue_states import usable
from bot.commands.spec import Answer, CommandContext
from bot.context import store_outlives_job
from bot.duplicates.rank import Candidate, Ranker
from bot.duplicates.suggestions import dismiss, suggestion
from bot.duplicates.terms import issue_terms
from bot.errors import ConfigError, GitHubError, ModelError, StoreError
from bot.gate.possible_duplicates import index_row, title_stage
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.neutralise import neutralise

if TYPE_CHECKING:
    from bot.duplicates.title_stage import Encoder

__all__ = [
    "EPHEMERAL_REPLY",
    "LISTED",
    "TITLE_CHARS",
    "dismiss_reply",
    "duplicates_reply",
    "list_duplicates",
]

LISTED = 5
"""How many earlier issues ``/duplicates`` ranks."""
TITLE_CHARS = 120

EPHEMERAL_REPLY = (
    "No duplicate index here: this job's store does not outlive the job (the default SQLite "
    "file on a GitHub-hosted runner), so it holds no earlier issues. Give the bot PostgreSQL "
    "(`db-path: postgresql://…`) or a SQLite file that is kept (a self-hosted runner, or a "
    "`db-path` the workflow keeps), then fill it once with `triage-bot index --repo OWNER/NAME`."
)
EMPTY_REPLY = (
    "The duplicate index holds no other issue of this repository yet: run "
    "`triage-bot index --repo OWNER/NAME` once to fill it with the earlier issues (new issues "
    "are added as the gate sees them)."
)


def _ranked(
    store: HistoryStore, repo: str, row: IndexedIssue, encoder: Encoder | None, *, keep: bool
) -> list[Candidate]:
    stage = title_stage(store, repo, encoder, keep=keep)
    return Ranker(store, repo, stage).rank(
        issue_terms(row.title, row.body),
        exclude=row.number,
        before=row.created_at,
        k=LISTED,
        title=row.title,
    )


def list_duplicates(call: CommandContext) -> Answer:
    """``/duplicates [dismiss]`` on an issue."""
    if call.command.choice == "dismiss":
        return _dismiss(call)
    if not store_outlives_job(call.settings):
        return EPHEMERAL_REPLY
    repo, number = call.repo, call.event.issue.number
    writes = not call.settings.dry_run
    store = call.job.store()
    try:
        row = _row(call, store)
        if row is None:
            return "Not ranked: the event gives no creation time for this issue."
        if writes:
            store.index_issues(repo, [row])
        others = store.index_size(repo) - (store.indexed_issue(repo, number) is not None)
        encoder = call.job.title_encoder()[0]
        try:
            found = _ranked(store, repo, row, encoder, keep=writes)
        except ModelError:  # the title model failed on this issue: the words still rank
            encoder = None
            found = _ranked(store, repo, row, None, keep=writes)
        mark = suggestion(store, repo, number)
    except StoreError as exc:
        return f"The duplicate index cannot be read: {neutralise(str(exc), max_chars=300)}."
    if others <= 0:
        return EMPTY_REPLY
    numbers = [c.number for c in found]
    states = call.github.issue_states(repo, numbers)
    kept = set(usable(states, repo, numbers))
    gone = [n for n in numbers if n not in states or states[n].repository.lower() != repo.lower()]
    if gone and writes:
        with contextlib.suppress(StoreError):  # the next /duplicates asks GitHub again
            store.drop_indexed(repo, gone)
    dismissed_by = None
    if mark is not None and mark.dismissed:
        dismissed_by = mark.dismissed_by or "?"
    return duplicates_reply(
        [c for c in found if c.number in kept],
        indexed=others,
        left_out=len(found) - len(kept),
        dismissed_by=dismissed_by,
        words_only=encoder is None,
    )


def _row(call: CommandContext, store: HistoryStore) -> IndexedIssue | None:
    issue = call.event.issue
    created = issue.created()
    if created is not None:
        return index_row(issue.number, issue.title, issue.body, created)
    return store.indexed_issue(call.repo, issue.number)


def duplicates_reply(
    candidates: Sequence[Candidate],
    *,
    indexed: int,
    left_out: int = 0,
    dismissed_by: str | None = None,
    words_only: bool = False,
) -> str:
    """The ``/duplicates`` reply; titles are untrusted, shown through :func:`neutralise`."""
    how = (
        "TF-IDF cosine of title and first body, 0–1; the title model is not set up, cannot be "
        "loaded or failed"
        if words_only
        else "TF-IDF cosine of title and first body with the titles' meaning, 0–1"
    )
    if candidates:
        lines = [
            "Possible duplicates: the earlier issues most like this one among the "
            f"{indexed} other issues indexed ({how}; no chat model):",
            "",
        ]
        lines += [
            f"- #{c.number} {neutralise(c.title, max_chars=TITLE_CHARS)} (score {c.score:.2f})"
            for c in candidates
        ]
    else:
        lines = [
            f"No earlier issue among the {indexed} other issues indexed shares this issue's words."
        ]
    if left_out:
        lines += [
            "",
            f"{left_out} more left out: deleted, transferred or locked on GitHub since indexed.",
        ]
    if dismissed_by is not None:
        who = neutralise("@" + dismissed_by, max_chars=60)
        lines += [
            "",
            f"Suggestions on the issue dismissed by {who}: the bot does not suggest them.",
        ]
    return "\n".join(lines)


def _dismiss(call: CommandContext) -> Answer:
    repo, number = call.repo, call.event.issue.number
    by = call.event.comment.user.login
    notes = []
    earlier: str | None = None
    if call.settings.dry_run:
        notes.append("Dry run: nothing recorded.")
    elif not store_outlives_job(call.settings):
        notes.append(
            "Not kept: this job's store does not outlive the job, so no later run would see "
            "the dismissal (PostgreSQL or a kept SQLite file keeps it)."
        )
    else:
        store = call.job.store()
        try:
            mark = suggestion(store, repo, number)
            if mark is not None and mark.dismissed:
                earlier = mark.dismissed_by or "?"
            else:
                dismiss(store, repo, number, by)
        except StoreError as exc:
            # the bot's own removal of the label is no dismissal: unrecorded, it would return
            return (
                "Possible-duplicate suggestions on this issue are not dismissed: the store "
                f"could not record it ({neutralise(str(exc), max_chars=300)}). The label, if "
                "on, stays: a person removing it dismisses them too."
            )
    notes += _remove_label(call)
    return dismiss_reply(by, earlier=earlier, notes=notes)


def _remove_label(call: CommandContext) -> list[str]:
    """The repository file's possible-duplicate label taken off the issue, if it is on."""
    try:
        job = call.job.with_repository_file(call.repo, call.event.repository.default_branch)
    except (ConfigError, GitHubError) as exc:
        return [f"The label was not checked: {neutralise(str(exc), max_chars=300)}."]
    file = job.settings.repo_file
    # ``duplicates.label`` is the repository file's possible-duplicate label, when it has one
    label = getattr(getattr(file, "duplicates", None), "label", None)
    on_issue = {name.lower(): name for name in call.event.issue.label_names}
    if not isinstance(label, str) or label.lower() not in on_issue:
        return []
    shown = neutralise(on_issue[label.lower()], max_chars=60)
    if call.settings.dry_run:
        return [f"Label {shown} not removed (dry run)."]
    job.github().remove_label(call.repo, call.event.issue.number, on_issue[label.lower()])
    return [f"Label {shown} removed."]


def dismiss_reply(by: str, *, earlier: str | None = None, notes: Sequence[str] = ()) -> str:
    """The ``/duplicates dismiss`` reply (logins are shown without mentioning anyone)."""
    if earlier is not None:
        head = (
            "Possible-duplicate suggestions on this issue were already dismissed by "
            f"{neutralise('@' + earlier, max_chars=60)}."
        )
    else:
        head = (
            "Possible-duplicate suggestions on this issue dismissed by "
            f"{neutralise('@' + by, max_chars=60)}: the bot will not suggest them here again "
            "(`/duplicates` still lists candidates on request)."
        )
    return " ".join([head, *notes])
