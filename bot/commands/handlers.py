"""The comment commands: one handler each, and :data:`COMMANDS`, the table everything reads.

A new command is one handler, one entry here, and its README row.
"""

from __future__ import annotations

from collections.abc import Callable

from bot import audit, gate
from bot.audit.contract import VERDICTS
from bot.audit.pr_comment import shown_path
from bot.audit.stats import (
    history_line,
    mermaid_fix_share,
    model_stats,
    stats_cells,
    stats_columns,
    weekly_stats,
)
from bot.commands.spec import Answer, CommandContext, CommandSpec, help_text
from bot.errors import InvalidRange
from bot.gate.stats import (
    gate_cells,
    gate_columns,
    gate_health,
    mermaid_error_share,
    version_cells,
    version_columns,
)
from bot.history.protocol import HistoryStore
from bot.neutralise import code_block, code_span, neutralise
from bot.run_report import fit

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


def list_history(call: CommandContext) -> Answer:
    """``/audit_history [N]``: the last N accepted audits; the store is opened read-only."""
    return _from_store(call, history_reply)


def show_stats(call: CommandContext) -> Answer:
    """``/audit_stats [WEEKS]``: weekly statistics; the store is opened read-only."""
    return _from_store(call, stats_reply)


def show_gate_stats(call: CommandContext) -> Answer:
    """``/triage_stats [WEEKS]``: weekly gate health; the store is opened read-only."""
    return _from_store(call, triage_stats_reply)


def list_commands(call: CommandContext) -> Answer:
    """``/help``: one line per command."""
    return "triage-bot commands:\n" + help_text(call.commands)


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


def stats_reply(store: HistoryStore, repo: str, weeks: int) -> str:
    """The ``/audit_stats`` reply: weekly table, chart of the ``FIX`` share, and per model."""
    stats = weekly_stats(store, repo, weeks)
    if not stats:
        return f"No accepted audits in the last {weeks} week(s)."
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


def triage_stats_reply(store: HistoryStore, repo: str, weeks: int) -> str:
    """The ``/triage_stats`` reply: weekly table, error chart, per model and prompt version."""
    health = gate_health(store, repo, weeks)
    if not health.weeks:
        return f"No gate decisions in the last {weeks} week(s)."
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
                    "weekly audit statistics for the last WEEKS weeks, and the same weeks per "
                    "model",
                    show_stats, arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("triage_stats", "count",
                    "weekly gate health for the last WEEKS weeks (verdicts, errors by kind, "
                    "model time, versions), and the same weeks per model and prompt version",
                    show_gate_stats, arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("help", "none", "list the commands", list_commands),
    )
}  # fmt: skip
"""Every command, in ``/help`` and README order, keyed by its lower-case word."""
