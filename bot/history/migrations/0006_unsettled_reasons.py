"""The unsettled gate decisions by reason, from a partial index: the stats count them per
record without reading the settled rows."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0005_record"}

BOTH = """
create index gate_outcomes_unsettled
    on gate_outcomes (repo, model, prompt_version, policy_version, verdict, reason)
    where outcome = 'unsettled';
"""

steps = [step(sql(BOTH))]
