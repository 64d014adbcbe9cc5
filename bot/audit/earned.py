"""The line review comments' stop rule, from the repository's live record of reported defects.

Once :data:`LINE_MIN_SETTLED` defects of the model identity and prompt version in use are
settled (acted on or not), line comments stop while authors acted on a smaller share than
``line-comments-min-acted``. The summary comment lists every defect either way, so the record
keeps building; a new prompt version or model starts a new one. A record that cannot be read
stops them too: the summary still holds every defect (docs/live-record.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import StoreError
from bot.history.protocol import HistoryStore
from bot.history.record import defect_records
from bot.shares import Share

__all__ = ["LINE_MIN_SETTLED", "LineRule", "line_rule"]

LINE_MIN_SETTLED = 30
"""Settled defects (acted on or not) from which the stop rule applies."""


@dataclass(frozen=True)
class LineRule:
    """Whether line comments are posted: ``stopped`` is why not (``None``: posted);
    ``basis`` names the record and its figure. Plain text for the caller's sink."""

    stopped: str | None
    basis: str


def line_rule(
    store: HistoryStore,
    repo: str,
    *,
    model: str,
    prompt_version: str,
    min_acted: float,
    aliases: Mapping[str, str] | None = None,
) -> LineRule:
    """The stop rule for ``model`` (its identity through ``aliases``) and ``prompt_version``
    in ``repo``: one grouped query, none when ``min_acted`` is 0."""
    if min_acted <= 0:
        return LineRule(None, "no bound (line-comments-min-acted is 0)")
    names = dict(aliases or {})
    try:
        records = defect_records(store, repo, names)
    except StoreError as exc:
        why = f"the live record could not be read ({exc}); the summary comment lists every defect"
        return LineRule(why, "the live record, unreadable")
    identity = names.get(model, model)
    acted = next(
        (r.acted_on for r in records if (r.model, r.prompt_version) == (identity, prompt_version)),
        Share(0, 0),
    )
    bound = f"{min_acted:.0%}"
    if acted.n < LINE_MIN_SETTLED or acted.value is None:
        return LineRule(
            None,
            f"the live record holds {acted.n} settled defect(s) of this model and prompt; the "
            f"stop rule applies from {LINE_MIN_SETTLED}",
        )
    figure = f"authors acted on {acted} of this model and prompt's settled defects"
    if acted.value < min_acted:
        return LineRule(
            f"{figure}, below {bound} (line-comments-min-acted); the summary comment lists "
            "every defect",
            f"{figure}, against {bound}",
        )
    return LineRule(None, f"{figure}, against {bound}")
