"""Write ``release_store.db``: a SQLite store as triage-bot 0.1.0 (commit 72e66f8) leaves it.

Made once, with that release's code: ``git worktree add /tmp/r 72e66f8 && cd /tmp/r &&
PYTHONPATH=. python tests/data/release_store/make_release_store.py``. It records the sqlite-utils
migrations ``m001_audits`` … ``m010_audit_weeks_by_value`` and holds an audit, two gate
decisions and an author comment. Never rewrite it with newer code.
"""

from __future__ import annotations

from pathlib import Path

from bot.history.github_memory import remember_comment
from bot.history.store import AuditRow, GateRow, Store

OUT = Path(__file__).with_name("release_store.db")

if __name__ == "__main__":
    OUT.unlink(missing_ok=True)
    store = Store(OUT)
    store.record_audits([
        AuditRow(repo="o/r", pr=7, head_sha="abc1234", path="src/a.py", line_start=1,
                 line_end=20, verdict="FIX", confidence="High", retried=True,
                 audit_format="markdown", model="qwen2.5-coder:1.5b",
                 prompt_version="audit@1111aaaa", prompt_tokens=900, output_tokens=120,
                 duration_ms=2500.0, markdown="## Bottom line\nfix it",
                 created_at="2026-01-05T10:00:00+00:00"),
    ])  # fmt: skip
    for issue, verdict, label in ((3, "ready", "ready-for-dev"), (4, None, "validator-error")):
        store.record_gate(
            GateRow(repo="o/r", issue=issue, event="opened", verdict=verdict, label=label,
                    reason="r", error_kind=None if verdict else "timeout",
                    model="qwen2.5-coder:1.5b", prompt_version="validator@7b2c93c7",
                    prompt_tokens=500, output_tokens=60, duration_ms=1800.0,
                    created_at="2026-01-06T09:00:00+00:00", content_sha="0123456789abcdef",
                    policy_version="policy@22223333")
        )  # fmt: skip
    remember_comment(store, "o/r", 3, 4242, "the comment body")
    store.close()
    print(OUT)
