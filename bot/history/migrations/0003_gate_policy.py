"""The decision policy's version, in the gate decision's unique key."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0002_github_memory"}

SQLITE = """
alter table gate_decisions add column policy_version text;
drop index gate_decisions_key;
create unique index gate_decisions_key
    on gate_decisions (repo, issue, content_sha, model, prompt_version, policy_version, label);
"""

POSTGRESQL = """
alter table gate_decisions add column policy_version text;
alter table gate_decisions drop constraint gate_decisions_key;
alter table gate_decisions add constraint gate_decisions_key
    unique (repo, issue, content_sha, model, prompt_version, policy_version, label);
"""

steps = [step(sql(sqlite=SQLITE, postgresql=POSTGRESQL))]
