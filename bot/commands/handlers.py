"""The comment commands: one handler each, and :data:`COMMANDS`, the table everything reads.

A new command is one handler, one entry here, and its README row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from bot import audit, gate
from bot.audit.contract import VERDICTS
from bot.audit.earned import LINE_MIN_SETTLED
from bot.audit.pr_comment import shown_path
from bot.audit.stats import (
    NO_DEFECT_RECORD,
    defect_cells,
    defect_columns,
    history_line,
    mermaid_fix_share,
    model_stats,
    stats_cells,
    stats_columns,
    weekly_stats,
)
from bot.commands.duplicate_commands import list_duplicates
from bot.commands.spec import Answer, CommandContext, CommandSpec, help_text
from bot.errors import InvalidRange
from bot.gate.earned import LIVE_MIN_SETTLED
from bot.gate.stats import (
    NO_LIVE_RECORD,
    duplicate_record_line,
    gate_cells,
    gate_columns,
    gate_health,
    mermaid_error_share,
    record_cells,
    record_columns,
    version_cells,
    version_columns,
)
from bot.history.protocol import HistoryStore
from bot.history.record import defect_records, gate_records
from bot.neutralise import code_block, code_span, neutralise
from bot.run_report import fit
from bot.settings_table import SettingsTable

__all__ = [
    "COMMANDS",
    "HISTORY_MAX_CHARS",
    "STORED_MAX_CHARS",
    "history_reply",
    "list_commands",
    "list_history",
    "rerun_audit",
    "rerun_gate",
    "show_gate_stats",
    "show_stats",
    "stats_reply",
    "triage_stats_reply",
]


def rerun_gate(call: CommandContext) -> Answer:
    """``/triage``: run the gate on the issue, even over a hand-set label (which stays)."""
    event = call.event.as_issues_event()
    repo = event.repository
    return gate.run(
        call.job.with_repository_file(repo.full_name, repo.default_branch), event, force=True
    )


def rerun_audit(call: CommandContext) -> Answer:
    """``/audit [PATH:START-END]``: audit the open PR now, or one range of a changed file.

    A closed PR or a bad range gets a reply, not an error.
    """
    pull = call.github.pull(call.repo, call.event.issue.number)
    if pull.state != "open":
        return f"This pull request is {pull.state}; only open pull requests are audited."
    try:
        job = call.job.with_repository_file(pull.repo, None)
        return audit.run(job, pull, requested_range=call.command.range)
    except InvalidRange as exc:
        return f"Cannot audit that range: {neutralise(str(exc), max_chars=300)}."


def _from_store(call: CommandContext, reply: Callable[[HistoryStore, str, int], str]) -> Answer:
    return reply(call.job.store(read_only=True), call.repo, call.command.count or 1)


def _aliases(call: CommandContext) -> dict[str, str]:
    file = call.job.settings.repo_file
    return dict(file.gate.model_aliases) if file is not None else {}


def list_history(call: CommandContext) -> Answer:
    """``/audit_history [N]``: the last N accepted audits; the store is opened read-only."""
    return _from_store(call, history_reply)


def show_stats(call: CommandContext) -> Answer:
    """``/audit_stats [WEEKS]``: weekly statistics and the live record of reported defects;
    the store is opened read-only."""
    min_acted = call.job.settings.line_comments_min_acted
    return _from_store(
        call,
        lambda store, repo, weeks: stats_reply(
            store, repo, weeks, min_acted=min_acted, aliases=_aliases(call)
        ),
    )


def show_gate_stats(call: CommandContext) -> Answer:
    """``/triage_stats [WEEKS]``: weekly gate health and the live record; the store is opened
    read-only."""
    min_precision = call.job.settings.comment_min_precision
    return _from_store(
        call,
        lambda store, repo, weeks: triage_stats_reply(
            store, repo, weeks, min_precision=min_precision, aliases=_aliases(call)
        ),
    )


def list_commands(call: CommandContext) -> Answer:
    """``/help``: one line per command."""
    return "triage-bot commands:\n" + help_text(call.commands)


DEFAULT_MIN_PRECISION: float = SettingsTable.comment_min_precision
"""``comment-min-precision``'s default, for a reply built without the job's settings."""

DEFAULT_MIN_ACTED: float = SettingsTable.line_comments_min_acted
"""``line-comments-min-acted``'s default, for a reply built without the job's settings."""


HISTORY_MAX_CHARS = 60_000
"""Longest ``/audit_history`` listing in characters: under GitHub's comment limit."""


def history_reply(store: HistoryStore, repo: str, count: int) -> str:
    """The ``/audit_history`` reply: rows past :data:`HISTORY_MAX_CHARS` are counted, not listed."""
    rows = store.audits(repo, limit=count)
    if not rows:
        return "No accepted audits are recorded for this repository yet."
    every = [history_line({**row, "path": shown_path(row["path"])}) for row in rows]
    lines, more = fit(every, HISTORY_MAX_CHARS, separator=1)  # a line break after each
    note = f"\n{more} more not listed (GitHub's comment limit)." if more else ""
    return f"Last {len(rows)} accepted audit(s):\n{code_block(lines)}{note}"


def stats_reply(
    store: HistoryStore,
    repo: str,
    weeks: int,
    *,
    min_acted: float = DEFAULT_MIN_ACTED,
    aliases: Mapping[str, str] | None = None,
) -> str:
    """The ``/audit_stats`` reply: weekly table, chart of the ``FIX`` share, per model, and the
    live record of reported defects (``min_acted``: the line comments' stop bound)."""
    record = _defect_record(store, repo, min_acted, aliases)
    stats = weekly_stats(store, repo, weeks)
    if not stats:
        return f"No accepted audits in the last {weeks} week(s).\n\n{record}"
    columns = stats_columns(short=False)
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(stats_cells(s, short=False, text=_stored)) + " |" for s in stats]
    return (
        f"Accepted audits, last {weeks} week(s) (weeks start Monday, UTC):\n\n"
        + "\n".join(table)
        + "\n\n"
        + mermaid_fix_share(stats)
        + "\n\n"
        + _per_model(store, repo, weeks)
        + "\n\n"
        + record
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _listed_more(total: int, shown: int, what: str) -> str:
    return f"\n\n{total - shown} more {what} not listed." if total > shown else ""


def _defect_record(
    store: HistoryStore, repo: str, min_acted: float, aliases: Mapping[str, str] | None
) -> str:
    records = defect_records(store, repo, dict(aliases or {}))
    if not records:
        return f"Live record: {NO_DEFECT_RECORD}"
    shown = records[:MODELS_SHOWN]
    rows = [defect_cells(r, min_acted=min_acted, text=_stored) for r in shown]
    return (
        "Live record: reported defects per model and prompt version, all time. Acted on: "
        "a later commit changed the cited line, or its thread was resolved and the file "
        "touched, among the defects settled as acted on or not (95% Wilson interval); line "
        f"comments stop from {LINE_MIN_SETTLED} settled below {min_acted:.0%}.\n\n"
        + _table(defect_columns(), rows)
        + _listed_more(len(records), len(shown), "model and prompt version(s)")
    )


MODELS_SHOWN = 20
"""Most models (or model and prompt versions) a stats reply lists; the rest are counted."""


def _per_model(store: HistoryStore, repo: str, weeks: int) -> str:
    rows = model_stats(store, repo, weeks)
    shown = rows[:MODELS_SHOWN]
    head = ("model", "audits", *VERDICTS, "retried")
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in shown:
        shares = (f"{m.share(n):.0%}" for n in m.verdicts.values())
        cells = (_stored(m.model), str(m.audits), *shares, f"{m.share(m.retried):.0%}")
        table.append("| " + " | ".join(cells) + " |")
    more = f"\n\n{len(rows) - len(shown)} more model(s) not listed." if rows[len(shown) :] else ""
    return "Per model, same weeks:\n\n" + "\n".join(table) + more


STORED_MAX_CHARS = 48
"""Longest stored string in a stats cell, cut with ``…``: keeps a reply under GitHub's limit."""


def _stored(text: str) -> str:
    # Inline code: GitHub links and formats nothing in it.
    return code_span(text, max_chars=STORED_MAX_CHARS, table=True)


def triage_stats_reply(
    store: HistoryStore,
    repo: str,
    weeks: int,
    *,
    min_precision: float = DEFAULT_MIN_PRECISION,
    aliases: Mapping[str, str] | None = None,
) -> str:
    """The ``/triage_stats`` reply: weekly table, error chart, per model and prompt version,
    and the live record (``min_precision``: the author comment's bound)."""
    record = _gate_record(store, repo, min_precision, aliases)
    health = gate_health(store, repo, weeks)
    if not health.weeks:
        return f"No gate decisions in the last {weeks} week(s).\n\n{record}"
    columns = gate_columns()
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(gate_cells(w, text=_stored)) + " |" for w in health.weeks]
    shown = health.versions[:MODELS_SHOWN]
    head = version_columns()
    per_version = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    per_version += ["| " + " | ".join(version_cells(v, text=_stored)) + " |" for v in shown]
    more = len(health.versions) - len(shown)
    return (
        f"Gate decisions, last {weeks} week(s) (weeks start Monday, UTC; p50 / p95: the "
        "model's time on decisions that reached it):\n\n"
        + "\n".join(table)
        + "\n\n"
        + mermaid_error_share(health.weeks)
        + "\n\nPer model and prompt version, same weeks (share of its decisions; "
        "validator-error is its error rate):\n\n"
        + "\n".join(per_version)
        + (f"\n\n{more} more model and prompt version(s) not listed." if more > 0 else "")
        + "\n\n"
        + record
    )


def _gate_record(
    store: HistoryStore, repo: str, min_precision: float, aliases: Mapping[str, str] | None
) -> str:
    records = gate_records(store, repo, dict(aliases or {}))
    duplicates = neutralise(duplicate_record_line(store, repo, min_precision))
    if not records:
        return f"Live record: {NO_LIVE_RECORD}\n\n{duplicates}"
    shown = records[:MODELS_SHOWN]
    rows = [record_cells(r, min_precision=min_precision, text=_stored) for r in shown]
    return (
        "Live record: the bot's latest decision per issue, settled from what maintainers and "
        "authors did next, per model, prompt version and policy, all time. Agreement: settled "
        "decisions the maintainers' actions match; precision: of the settled decisions with "
        "that verdict; each with its count and 95% Wilson interval. The author comment is "
        f"decided by the live record from {LIVE_MIN_SETTLED} settled needs-refinement "
        f"decisions against {min_precision:.0%}, by the policy's calibrated figure before."
        "\n\n"
        + _table(record_columns(), rows)
        + _listed_more(len(records), len(shown), "model, prompt and policy record(s)")
        + f"\n\n{duplicates}"
    )


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("triage", "none",
                    "re-run the issue gate, even over a hand-set gate label (which stays: the "
                    "bot removes only its own labels)",
                    rerun_gate, where="issue",
                    wrong_place="runs the issue gate on issues; on a pull request use `/audit`"),
        CommandSpec("audit", "range", "re-run the PR audit, or audit one range of a changed file",
                    rerun_audit, where="pr",
                    wrong_place="runs on pull requests; on an issue use `/triage`",
                    arg_name="PATH:START-END"),
        CommandSpec("audit_history", "count", "list the last N accepted audits of this repository",
                    list_history, arg_name="N", default=10, maximum=50),
        CommandSpec("audit_stats", "count",
                    "weekly audit statistics for the last WEEKS weeks, the same weeks per model, "
                    "and the live record: defects reported and the share authors acted on",
                    show_stats, arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("triage_stats", "count",
                    "weekly gate health for the last WEEKS weeks (verdicts, errors by kind, "
                    "model time, versions), the same weeks per model and prompt version, and the "
                    "live record: agreement with the maintainers and precision",
                    show_gate_stats, arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("duplicates", "choice",
                    "list the earlier issues most like this one, with their scores (no model "
                    "call); `dismiss`: the bot stops suggesting duplicates on this issue",
                    list_duplicates, where="issue",
                    wrong_place="lists possible duplicates of issues, not of pull requests",
                    arg_name="dismiss", choices=("dismiss",)),
        CommandSpec("help", "none", "list the commands", list_commands),
    )
}  # fmt: skip
"""Every command, in ``/help`` and README order, keyed by its lower-case word."""
