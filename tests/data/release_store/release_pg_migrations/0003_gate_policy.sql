-- The decision policy's version beside the prompt version, and in the gate decision's unique
-- key: the twin of the SQLite migration m009_gate_policy. Older rows have none (NULL).
-- depends: 0002_github_memory

alter table gate_decisions add column policy_version text;
alter table gate_decisions drop constraint gate_decisions_key;
alter table gate_decisions add constraint gate_decisions_key
    unique (repo, issue, content_sha, model, prompt_version, policy_version, label);
