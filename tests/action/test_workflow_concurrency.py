"""The example workflow's concurrency groups: no commenter may cancel a queued audit.

GitHub keeps one running and one pending run per concurrency group; a run that queues behind a
pending one cancels it. The workflow's group and cancel-in-progress expressions are evaluated for
real webhook payloads with a small evaluator of the `a || b` and `a == 'b'` forms they use, and
no comment may share a group with an audit, an issue run or another comment.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.support import DATA
from tests.support.workflow_expr import concurrency


def _payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "webhooks" / name).read_text("utf-8"))
    return data


def _comment_on_pr(number: int, comment_id: int) -> dict[str, Any]:
    """An issue_comment on pull request NUMBER, as GitHub sends it: the PR as `issue`, with a
    `pull_request` link, and both issue.number and comment.id set."""
    payload = copy.deepcopy(_payload("issue_comment.created.0.json"))
    payload["issue"]["number"] = number
    payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/o/r/pulls/{number}"}
    payload["comment"]["id"] = comment_id
    return payload


def test_comments_never_share_a_group_with_audits_issues_or_each_other() -> None:
    pr = _payload("pull_request.opened.0.json")
    number = pr["pull_request"]["number"]
    issue = _payload("issues.opened.18.json")
    on_issue = _payload("issue_comment.created.0.json")
    assert on_issue["issue"]["number"] == issue["issue"]["number"]
    runs = {
        "audit": concurrency("pull_request_target", pr),
        "issue": concurrency("issues", issue),
        "comment on the issue": concurrency("issue_comment", on_issue),
        "comment on the PR": concurrency("issue_comment", _comment_on_pr(number, 1001)),
        "another comment on the PR": concurrency("issue_comment", _comment_on_pr(number, 1002)),
    }
    groups = {what: group for what, (group, _) in runs.items()}
    assert len(set(groups.values())) == len(groups), groups


def test_only_a_newer_event_of_the_same_pr_supersedes_its_audit() -> None:
    opened = _payload("pull_request.opened.0.json")
    pushed = _payload("pull_request.synchronize.22.json")
    assert opened["number"] == pushed["number"]
    audit_group, audit_cancels = concurrency("pull_request_target", opened)
    assert concurrency("pull_request_target", pushed) == (audit_group, True)
    assert audit_cancels
    other_pr = copy.deepcopy(pushed)
    other_pr["number"] = other_pr["pull_request"]["number"] = pushed["number"] + 1
    assert concurrency("pull_request_target", other_pr)[0] != audit_group
    comment = concurrency("issue_comment", _comment_on_pr(opened["number"], 1001))
    assert comment[0] != audit_group
    assert comment[1] is False, "a comment run must not cancel anything in progress"
    for name in ("issues.opened.18.json", "issues.edited.7.json", "issues.reopened.20.json"):
        group, cancels = concurrency("issues", _payload(name))
        assert cancels is False
        assert group == concurrency("issues", _payload("issues.opened.18.json"))[0]


def test_the_scheduled_recovery_run_has_a_group_of_its_own() -> None:
    """The hourly `backlog --retry-errors` run. Its payload carries the cron line
    (`github.event.schedule`) and no issue, PR or comment, so it falls through to `'backlog'`:
    one group only the cron starts runs in, which cancels nothing."""
    import yaml

    from tests.support.workflow_expr import WORKFLOW

    crons = yaml.safe_load(WORKFLOW.read_text("utf-8"))[True]["schedule"]  # YAML 1.1: on → True
    assert [c["cron"] for c in crons] == ["17 * * * *"]
    scheduled = {"schedule": crons[0]["cron"], "workflow": ".github/workflows/triage.yml"}
    group, cancels = concurrency("schedule", scheduled)
    assert (group, cancels) == ("triage-schedule-backlog", False)
    others = {
        concurrency("issues", _payload("issues.opened.18.json"))[0],
        concurrency("pull_request_target", _payload("pull_request.opened.0.json"))[0],
        concurrency("issue_comment", _payload("issue_comment.created.0.json"))[0],
    }
    assert group not in others
