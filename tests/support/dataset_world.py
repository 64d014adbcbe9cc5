"""A repository's closed issues for the dataset tests and benchmark: one scenario per
labelling rule (and per way an issue is left out), each as GitHub's wire JSON with the row it
must give.

Shapes: GitHub's REST docs ("List repository issues", "List timeline events for an issue",
the issue-comment and issue-event objects) and GraphQL docs (``Issue.userContentEdits``), and
the real objects in @octokit/fixtures 23.1.2 (``paginate-issues``: an issue item) and
@octokit/webhooks-examples 7.6.1 (a comment, a label, the repository Codertocat/Hello-World),
MIT. Written to those shapes here: no GitHub is reachable where this project is built.
``tests/dataset/test_dataset.py`` and ``benchmarks/dataset.py`` use them (through the loopback
server of ``tests/support/dataset_server.py``); the cassettes ``cassettes/dataset_*.yaml`` hold the
same shapes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

REPO = "Codertocat/Hello-World"
API = "https://api.github.com"
T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)

REPORTER = "Codertocat"
MAINTAINER = "octocat"
COMMIT = "6dcb09b5b57875f334f61aebed695e2e4193db5e"

APP_BOT = "my-triage-app[bot]"
"""The bot run with an app's token, its login not configured (``bot-login`` unset)."""
TRIAGER = "triage-helper[bot]"
"""A bot the repository file lists in ``dataset.triager_bots``."""
STALE = "stale[bot]"
"""A stale bot (not listed)."""
GATE_NEEDS_INFO = "status: needs info"
"""The repository file's name for the gate's needs-refinement label (the README's example)."""
OTHER_REPO = "Codertocat/Other-World"
"""Where the transferred issue went."""
OTHER_REPO_ID = 186853099
"""That repository's id (GitHub redirects to ``/repositories/{id}/…``)."""


def stamp(at: datetime) -> str:
    """GitHub's REST time format."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def user(login: str, kind: str = "User", number: int = 21031067) -> dict[str, Any]:
    """A user object as GitHub embeds it (the fields the real payloads carry)."""
    return {
        "login": login,
        "id": number,
        "node_id": "MDQ6VXNlcjIxMDMxMDY3",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "gravatar_id": "",
        "url": f"{API}/users/{login}",
        "html_url": f"https://github.com/{login}",
        "type": kind,
        "site_admin": False,
    }


def node_id(number: int) -> str:
    """An issue's GraphQL id (opaque to the bot; unique per number here)."""
    return base64.b64encode(f"04:Issue{186853002 + number}".encode()).decode()


def issue_item(
    number: int,
    *,
    title: str,
    body: str | None,
    created: datetime,
    author: str = REPORTER,
    author_type: str = "User",
    association: str = "NONE",
    labels: tuple[str, ...] = (),
    state_reason: str | None = "completed",
    locked: bool = False,
    lock_reason: str | None = None,
    pull_request: bool = False,
) -> dict[str, Any]:
    """An item of ``GET /repos/{o}/{r}/issues?state=closed``."""
    url = f"{API}/repos/{REPO}/issues/{number}"
    item: dict[str, Any] = {
        "url": url,
        "repository_url": f"{API}/repos/{REPO}",
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "html_url": f"https://github.com/{REPO}/{'pull' if pull_request else 'issues'}/{number}",
        "id": 444500000 + number,
        "node_id": node_id(number),
        "number": number,
        "title": title,
        "user": user(author, author_type),
        "labels": [
            {
                "id": 1362934389 + i,
                "node_id": "MDU6TGFiZWwxMzYyOTM0Mzg5",
                "url": f"{API}/repos/{REPO}/labels/{quote(name)}",
                "name": name,
                "color": "d73a4a",
                "default": False,
                "description": None,
            }
            for i, name in enumerate(labels)
        ],
        "state": "closed",
        "locked": locked,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "created_at": stamp(created),
        "updated_at": stamp(created + timedelta(days=9)),
        "closed_at": stamp(created + timedelta(days=9)),
        "author_association": association,
        "active_lock_reason": lock_reason,
        "body": body,
        "timeline_url": f"{url}/timeline",
        "performed_via_github_app": None,
        "state_reason": None if pull_request else state_reason,
    }
    if pull_request:
        item["pull_request"] = {
            "url": f"{API}/repos/{REPO}/pulls/{number}",
            "html_url": f"https://github.com/{REPO}/pull/{number}",
            "diff_url": f"https://github.com/{REPO}/pull/{number}.diff",
            "patch_url": f"https://github.com/{REPO}/pull/{number}.patch",
            "merged_at": stamp(created + timedelta(days=1)),
        }
    return item


def _event(kind: str, at: datetime, actor: str, actor_type: str = "User") -> dict[str, Any]:
    return {
        "id": 6430295168,
        "node_id": "LE_lADOCWIwHs5HwC0kzwAAAAF_RoSA",
        "url": f"{API}/repos/{REPO}/issues/events/6430295168",
        "actor": user(actor, actor_type),
        "event": kind,
        "commit_id": None,
        "commit_url": None,
        "created_at": stamp(at),
        "performed_via_github_app": None,
    }


def labeled(
    at: datetime, label: str, actor: str = MAINTAINER, kind: str = "User"
) -> dict[str, Any]:
    """A ``labeled`` timeline event."""
    return {**_event("labeled", at, actor, kind), "label": {"name": label, "color": "d73a4a"}}


def unlabeled(
    at: datetime, label: str, actor: str = MAINTAINER, kind: str = "User"
) -> dict[str, Any]:
    """An ``unlabeled`` timeline event (the ``labeled`` event's shape)."""
    return {**_event("unlabeled", at, actor, kind), "label": {"name": label, "color": "d73a4a"}}


def commented(
    at: datetime,
    body: str,
    login: str = MAINTAINER,
    association: str = "MEMBER",
    kind: str = "User",
) -> dict[str, Any]:
    """A ``commented`` timeline event: an issue comment with ``event`` and ``actor``."""
    return {
        "url": f"{API}/repos/{REPO}/issues/comments/492700400",
        "html_url": f"https://github.com/{REPO}/issues/1#issuecomment-492700400",
        "issue_url": f"{API}/repos/{REPO}/issues/1",
        "id": 492700400,
        "node_id": "MDEyOklzc3VlQ29tbWVudDQ5MjcwMDQwMA==",
        "user": user(login, kind),
        "created_at": stamp(at),
        "updated_at": stamp(at),
        "author_association": association,
        "body": body,
        "performed_via_github_app": None,
        "event": "commented",
        "actor": user(login, kind),
    }


def closed(
    at: datetime, reason: str = "completed", commit: str | None = None, actor: str = MAINTAINER
) -> dict[str, Any]:
    """A ``closed`` timeline event (``commit_id`` when a commit closed it)."""
    event = {**_event("closed", at, actor), "state_reason": reason}
    if commit:
        event["commit_id"] = commit
        event["commit_url"] = f"{API}/repos/{REPO}/commits/{commit}"
    return event


def referenced(at: datetime, commit: str = COMMIT) -> dict[str, Any]:
    """A ``referenced`` event: a commit that names the issue."""
    return {
        **_event("referenced", at, MAINTAINER),
        "commit_id": commit,
        "commit_url": f"{API}/repos/{REPO}/commits/{commit}",
    }


def cross_referenced(
    at: datetime, number: int, *, merged: bool, repo: str = REPO
) -> dict[str, Any]:
    """A ``cross-referenced`` event from a pull request (no ``id``: GitHub gives none)."""
    source = issue_item(
        number, title="Fix it", body="Fixes the issue", created=at, pull_request=True
    )
    source["pull_request"]["merged_at"] = stamp(at + timedelta(hours=2)) if merged else None
    source["repository"] = {"id": 186853002, "full_name": repo, "name": repo.split("/")[1]}
    return {
        "actor": user(MAINTAINER),
        "created_at": stamp(at),
        "updated_at": stamp(at),
        "source": {"type": "issue", "issue": source},
        "event": "cross-referenced",
    }


def renamed(at: datetime, old: str, new: str) -> dict[str, Any]:
    """A ``renamed`` event (the title before and after)."""
    return {**_event("renamed", at, REPORTER), "rename": {"from": old, "to": new}}


def noise(at: datetime) -> list[dict[str, Any]]:
    """Events every timeline has that decide nothing."""
    return [
        {**_event("subscribed", at, MAINTAINER)},
        {**_event("mentioned", at, MAINTAINER)},
    ]


def edit_node(
    number: int, revisions: list[tuple[datetime, str | None, str]], *, created_kept: bool = True
) -> dict[str, Any]:
    """A GraphQL ``Issue`` with its body's edit history, newest revision first; each is
    (edited at, whole body or ``None`` for a revision deleted from the history, editor)."""
    newest_first = sorted(revisions, key=lambda r: r[0], reverse=True)
    return {
        "id": node_id(number),
        "lastEditedAt": stamp(newest_first[0][0]) if newest_first else None,
        "includesCreatedEdit": created_kept,
        "userContentEdits": {
            "totalCount": len(newest_first),
            "nodes": [
                {
                    "editedAt": stamp(at),
                    "deletedAt": None if text is not None else stamp(at + timedelta(days=1)),
                    "diff": text,
                    "editor": {"login": editor},
                }
                for at, text, editor in newest_first
            ],
        },
    }


@dataclass
class Scenario:
    """One closed issue: its wire JSON and what the dataset must make of it.

    ``expected`` is the row's verdict, or ``None`` when the issue is left out for ``skip``
    (a :class:`~bot.dataset.rules.SkipReason` name); ``title`` and ``body`` are the row's
    text (the first seen); ``timeline`` ``None`` is a deleted issue (404); ``moved`` is
    (repository id, number there) of an issue transferred since it was listed (GitHub
    answers its timeline with a 301 to ``/repositories/{id}/issues/{number}/timeline``).
    """

    rule: str
    number: int
    item: dict[str, Any]
    timeline: list[dict[str, Any]] | None
    expected: str | None = None
    skip: str | None = None
    borderline: bool = False
    edits: dict[str, Any] | None = None
    title: str = ""
    body: str = ""
    kind: str = "other"
    extra: dict[str, Any] = field(default_factory=dict)
    moved: tuple[int, int] | None = None


FULL_BODY = (
    "Version 4.2.0 on Ubuntu 24.04.\n\nSteps:\n1. `tool export --format csv`\n\n"
    "Expected all rows, got the last one missing."
)
SHORT_BODY = "export is broken"
ANSWER = "It is 4.2.0 on Ubuntu 24.04, with `tool export --format csv`."


def _issue(number: int, start: datetime, body: str = SHORT_BODY, **fields: Any) -> dict[str, Any]:
    return issue_item(number, title=f"Export fails ({number})", body=body, created=start, **fields)


Builder = Callable[[int, datetime], Scenario]


def needs_info_label(n: int, t: datetime) -> Scenario:
    timeline = [
        *noise(t + timedelta(minutes=5)),
        labeled(t + timedelta(hours=2), "needs-info"),
        commented(t + timedelta(days=1), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=3), commit=COMMIT),
    ]
    return Scenario(
        "needs-info label",
        n,
        _issue(n, t, labels=("bug",)),
        timeline,
        "NEEDS_REFINEMENT",
        kind="bug",
        body=SHORT_BODY,
        extra={"rationale": "label needs-info added by a maintainer 2 h after opening"},
    )


def configured_needs_info_label(n: int, t: datetime) -> Scenario:
    timeline = [
        labeled(t + timedelta(hours=5), "Status: More Details Please"),
        commented(t + timedelta(days=1), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), reason="completed"),
    ]
    return Scenario("configured needs-info label", n, _issue(n, t), timeline, "NEEDS_REFINEMENT")


def question_answered(n: int, t: datetime) -> Scenario:
    timeline = [
        commented(
            t + timedelta(hours=3), "Thanks! Which version do you run?", association="COLLABORATOR"
        ),
        commented(t + timedelta(hours=9), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "question answered",
        n,
        _issue(n, t, labels=("type: bug",)),
        timeline,
        "NEEDS_REFINEMENT",
        kind="bug",
        extra={
            "rationale": "a collaborator asked a question 3 h after opening; "
            "the reporter answered 6 h later"
        },
    )


def question_answered_by_edit(n: int, t: datetime) -> Scenario:
    """The reporter answered by editing the body: the row keeps the body as first posted."""
    edited = t + timedelta(hours=6)
    timeline = [
        commented(t + timedelta(hours=1), "Could you add the steps?", association="OWNER"),
        renamed(t + timedelta(hours=6), "export broken", f"Export fails ({n})"),
        closed(t + timedelta(days=1), commit=COMMIT),
    ]
    edits = edit_node(n, [(t, SHORT_BODY, REPORTER), (edited, FULL_BODY, REPORTER)])
    return Scenario(
        "question answered by an edit",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "NEEDS_REFINEMENT",
        edits=edits,
        title="export broken",
        body=SHORT_BODY,
    )


def question_then_not_planned(n: int, t: datetime) -> Scenario:
    timeline = [
        commented(t + timedelta(days=1), "Can you share a reproduction?"),
        closed(t + timedelta(days=30), reason="not_planned"),
        commented(t + timedelta(days=31), "sorry, I was away", REPORTER, "NONE"),
    ]
    return Scenario(
        "question unanswered, closed not planned",
        n,
        _issue(n, t, state_reason="not_planned"),
        timeline,
        "NEEDS_REFINEMENT",
    )


def closed_by_commit(n: int, t: datetime) -> Scenario:
    timeline = [
        *noise(t + timedelta(minutes=1)),
        referenced(t + timedelta(days=2)),
        closed(t + timedelta(days=2), commit=COMMIT),
        commented(t + timedelta(days=3), "Does the release fix it for you?"),
    ]
    return Scenario(
        "closed by a commit",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "VALID",
        body=FULL_BODY,
        extra={
            "rationale": "closed by commit 6dcb09b 2 d after opening, with no "
            "request for information before"
        },
    )


def merged_pull_request(n: int, t: datetime) -> Scenario:
    timeline = [
        cross_referenced(t + timedelta(hours=20), 9000 + n, merged=True),
        closed(t + timedelta(days=1)),
    ]
    return Scenario(
        "merged pull request",
        n,
        _issue(n, t, body=FULL_BODY, labels=("enhancement",)),
        timeline,
        "VALID",
        body=FULL_BODY,
        kind="feature",
    )


def accepted_label(n: int, t: datetime) -> Scenario:
    timeline = [labeled(t + timedelta(hours=1), "Confirmed"), closed(t + timedelta(days=4))]
    return Scenario(
        "accepted label", n, _issue(n, t, body=FULL_BODY), timeline, "VALID", body=FULL_BODY
    )


def configured_accepted_label(n: int, t: datetime) -> Scenario:
    timeline = [labeled(t + timedelta(hours=1), "triaged/ready"), closed(t + timedelta(days=4))]
    return Scenario(
        "configured accepted label",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "VALID",
        body=FULL_BODY,
    )


def needs_info_then_fixed_unanswered(n: int, t: datetime) -> Scenario:
    timeline = [
        labeled(t + timedelta(hours=1), "needs-repro", actor="issue-labeler[bot]", kind="Bot"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "needs-info, fixed without an answer",
        n,
        _issue(n, t),
        timeline,
        "NEEDS_REFINEMENT",
        borderline=True,
    )


def accepted_then_asked(n: int, t: datetime) -> Scenario:
    timeline = [
        labeled(t + timedelta(hours=1), "accepted"),
        commented(t + timedelta(hours=2), "Which OS is this on?"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "accepted, then asked",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "VALID",
        borderline=True,
        body=FULL_BODY,
    )


def question_in_code_only(n: int, t: datetime) -> Scenario:
    """A maintainer's comment whose only ``?`` is in code, a quote or a URL asks nothing."""
    words = (
        "> is this a bug?\n\nIt is: `re.match('a?')` fails, see "
        "https://example.com/a?b=1\n\n```\nwhy?\n```"
    )
    timeline = [
        commented(t + timedelta(hours=1), words),
        closed(t + timedelta(days=1), commit=COMMIT),
    ]
    return Scenario(
        "no question, fixed", n, _issue(n, t, body=FULL_BODY), timeline, "VALID", body=FULL_BODY
    )


def template_label_then_fixed(n: int, t: datetime) -> Scenario:
    """An issue form's label comes from the reporter at opening: it decides nothing."""
    timeline = [
        labeled(t, "needs-info", actor=REPORTER),
        closed(t + timedelta(days=1), commit=COMMIT),
    ]
    return Scenario(
        "issue-form label, fixed",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "VALID",
        body=FULL_BODY,
    )


def locked_resolved_fixed(n: int, t: datetime) -> Scenario:
    timeline = [
        closed(t + timedelta(days=1), commit=COMMIT),
        {**_event("locked", t + timedelta(days=40), "lock[bot]", "Bot"), "lock_reason": "resolved"},
    ]
    item = _issue(n, t, body=FULL_BODY, locked=True, lock_reason="resolved")
    return Scenario("locked as resolved, fixed", n, item, timeline, "VALID", body=FULL_BODY)


def question_unanswered_fixed(n: int, t: datetime) -> Scenario:
    timeline = [
        commented(t + timedelta(hours=1), "Do you have a log?"),
        closed(t + timedelta(days=1), commit=COMMIT),
    ]
    return Scenario("question unanswered, fixed", n, _issue(n, t), timeline, skip="UNANSWERED")


def not_planned_no_request(n: int, t: datetime) -> Scenario:
    timeline = [
        commented(t + timedelta(hours=1), "Out of scope, sorry."),
        closed(t + timedelta(hours=1), "not_planned"),
    ]
    return Scenario(
        "not planned, no request",
        n,
        _issue(n, t, state_reason="not_planned"),
        timeline,
        skip="NOT_PLANNED",
    )


def closed_without_decision(n: int, t: datetime) -> Scenario:
    timeline = [
        commented(t + timedelta(hours=1), "Thanks, works now."),
        closed(t + timedelta(hours=2)),
    ]
    return Scenario("closed, no decision", n, _issue(n, t), timeline, skip="NO_DECISION")


def duplicate(n: int, t: datetime) -> Scenario:
    timeline = [closed(t + timedelta(hours=2), reason="duplicate")]
    return Scenario(
        "duplicate", n, _issue(n, t, state_reason="duplicate"), timeline, skip="DUPLICATE"
    )


def bot_issue(n: int, t: datetime) -> Scenario:
    item = _issue(n, t, author="dependabot[bot]", author_type="Bot")
    return Scenario("opened by a bot", n, item, [], skip="BOT")


def maintainer_issue(n: int, t: datetime) -> Scenario:
    return Scenario(
        "opened by a maintainer",
        n,
        _issue(n, t, author=MAINTAINER, association="MEMBER"),
        [],
        skip="MAINTAINER",
    )


def locked_spam(n: int, t: datetime) -> Scenario:
    return Scenario(
        "locked as spam", n, _issue(n, t, locked=True, lock_reason="spam"), [], skip="LOCKED"
    )


def deleted(n: int, t: datetime) -> Scenario:
    return Scenario("deleted after listing", n, _issue(n, t), None, skip="GONE")


def edited_without_history(n: int, t: datetime) -> Scenario:
    """Edited after the first response, and GitHub kept no earlier text: left out."""
    timeline = [
        labeled(t + timedelta(hours=1), "needs-info"),
        closed(t + timedelta(days=1), commit=COMMIT),
    ]
    edits = edit_node(n, [(t + timedelta(hours=5), FULL_BODY, REPORTER)], created_kept=False)
    return Scenario(
        "edited, no earlier text",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        skip="TEXT_UNKNOWN",
        edits=edits,
    )


def edited_before_response(n: int, t: datetime) -> Scenario:
    """Edited before anyone responded: the row keeps the edited body, what was judged."""
    edits = edit_node(
        n, [(t, SHORT_BODY, REPORTER), (t + timedelta(minutes=10), FULL_BODY, REPORTER)]
    )
    timeline = [labeled(t + timedelta(hours=1), "confirmed"), closed(t + timedelta(days=1))]
    return Scenario(
        "edited before any response",
        n,
        _issue(n, t, body=FULL_BODY),
        timeline,
        "VALID",
        edits=edits,
        body=FULL_BODY,
    )


def revision_deleted(n: int, t: datetime) -> Scenario:
    """The author deleted the first revision from the history: its text is gone, left out."""
    edits = edit_node(n, [(t, None, REPORTER), (t + timedelta(days=1), FULL_BODY, REPORTER)])
    timeline = [labeled(t + timedelta(hours=1), "needs-info"), closed(t + timedelta(days=2))]
    return Scenario(
        "first revision deleted", n, _issue(n, t, body=FULL_BODY), timeline,
        skip="TEXT_UNKNOWN", edits=edits,
    )  # fmt: skip


def renamed_gate_label(n: int, t: datetime) -> Scenario:
    """The bot, with an app's token and no ``bot-login``, adds its needs-refinement label
    under the repository's name for it, which reads like a needs-info label: a gate label
    is the bot's decision, whoever added it."""
    timeline = [
        labeled(t + timedelta(minutes=1), GATE_NEEDS_INFO, actor=APP_BOT, kind="Bot"),
        commented(t + timedelta(hours=3), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "renamed gate label",
        n,
        _issue(n, t),
        timeline,
        "VALID",
        extra={
            "rationale": "closed by commit 6dcb09b 2 d after opening, with no request "
            "for information before"
        },
    )


def bot_login_label(n: int, t: datetime) -> Scenario:
    """The bot's own login (the Actions token's, ``bot-login`` unset) adds a label under an
    earlier name of its gate label, one the repository file no longer names."""
    timeline = [
        labeled(t + timedelta(minutes=1), "awaiting-response", "github-actions[bot]", "Bot"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario("the bot's own label", n, _issue(n, t), timeline, "VALID")


def stale_bot_question(n: int, t: datetime) -> Scenario:
    """A stale bot asks whether the issue still happens; the reporter says yes, and it is
    fixed: nobody asked for anything about the report."""
    timeline = [
        commented(
            t + timedelta(days=30),
            "This issue has been automatically marked as stale. Is this still a problem?",
            STALE,
            "NONE",
            "Bot",
        ),
        commented(t + timedelta(days=31), "Yes, still on 4.2.", REPORTER, "NONE"),
        closed(t + timedelta(days=40), commit=COMMIT),
    ]
    return Scenario(
        "stale bot's question",
        n,
        _issue(n, t),
        timeline,
        "VALID",
        extra={
            "rationale": "closed by commit 6dcb09b 40 d after opening, with no request "
            "for information before"
        },
    )


def triager_bot_question(n: int, t: datetime) -> Scenario:
    """A bot the repository file lists as triaging for it asks, and the reporter answers."""
    timeline = [
        commented(t + timedelta(minutes=10), "Which version do you run?", TRIAGER, "NONE", "Bot"),
        commented(t + timedelta(hours=2), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "listed triager bot's question",
        n,
        _issue(n, t),
        timeline,
        "NEEDS_REFINEMENT",
        extra={
            "rationale": "a triager bot asked a question 10 min after opening; the reporter "
            "answered 1 h later"
        },
    )


def duplicate_question(n: int, t: datetime) -> Scenario:
    """A maintainer asks whether it is another issue, the reporter says yes, and it is
    closed as a duplicate: a duplicate check, not a request for information."""
    timeline = [
        commented(t + timedelta(hours=1), "Is this the same as #101?"),
        commented(t + timedelta(hours=2), "Yes, sorry, I missed that one.", REPORTER, "NONE"),
        closed(t + timedelta(hours=3), reason="duplicate"),
    ]
    item = _issue(n, t, state_reason="duplicate")
    return Scenario("duplicate check answered", n, item, timeline, skip="DUPLICATE")


def question_naming_an_issue(n: int, t: datetime) -> Scenario:
    """A question that names another issue in passing still asks the reporter something."""
    timeline = [
        commented(t + timedelta(hours=1), "Does the workaround in #101 change anything for you?"),
        commented(t + timedelta(hours=5), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "question naming an issue, answered", n, _issue(n, t), timeline, "NEEDS_REFINEMENT"
    )


def _elsewhere(event: dict[str, Any], repo: str) -> dict[str, Any]:
    """``event`` as another repository's timeline gives it: its own URLs name ``repo``."""
    moved = dict(event)
    for key in ("url", "html_url", "issue_url"):
        if isinstance(moved.get(key), str):
            moved[key] = moved[key].replace(f"/{REPO}/", f"/{repo}/")
    return moved


def transferred(n: int, t: datetime) -> Scenario:
    """Transferred to another repository after the list was read: GitHub redirects the
    timeline there (301) and PyGithub follows; its events are the other repository's."""
    timeline = [
        labeled(t + timedelta(hours=2), "needs-info"),
        commented(t + timedelta(days=1), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=3), commit=COMMIT),
    ]
    return Scenario(
        "transferred since listed",
        n,
        _issue(n, t),
        [_elsewhere(event, OTHER_REPO) for event in timeline],
        skip="TRANSFERRED",
        moved=(OTHER_REPO_ID, 300 + n),
    )


def renamed_same_second(n: int, t: datetime) -> Scenario:
    """The reporter renames the issue in the same second a maintainer labels it, after the
    label in GitHub's order: the maintainer saw the earlier title."""
    at = t + timedelta(hours=1)
    timeline = [
        labeled(at, "needs-info"),
        renamed(at, "export broken", f"Export fails ({n})"),
        commented(t + timedelta(days=1), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "renamed in the second of the label, after it",
        n,
        _issue(n, t),
        timeline,
        "NEEDS_REFINEMENT",
        title="export broken",
    )


def renamed_same_second_before(n: int, t: datetime) -> Scenario:
    """The same second, the rename first in GitHub's order: the maintainer saw the new one."""
    at = t + timedelta(hours=1)
    timeline = [
        renamed(at, "export broken", f"Export fails ({n})"),
        labeled(at, "needs-info"),
        commented(t + timedelta(days=1), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    return Scenario(
        "renamed in the second of the label, before it",
        n,
        _issue(n, t),
        timeline,
        "NEEDS_REFINEMENT",
    )


BUILDERS: tuple[Builder, ...] = (
    needs_info_label,
    configured_needs_info_label,
    question_answered,
    question_answered_by_edit,
    question_then_not_planned,
    closed_by_commit,
    merged_pull_request,
    accepted_label,
    configured_accepted_label,
    needs_info_then_fixed_unanswered,
    accepted_then_asked,
    question_in_code_only,
    template_label_then_fixed,
    locked_resolved_fixed,
    question_unanswered_fixed,
    not_planned_no_request,
    closed_without_decision,
    duplicate,
    bot_issue,
    maintainer_issue,
    locked_spam,
    deleted,
    edited_without_history,
    edited_before_response,
    revision_deleted,
    renamed_gate_label,
    bot_login_label,
    stale_bot_question,
    triager_bot_question,
    duplicate_question,
    question_naming_an_issue,
    transferred,
    renamed_same_second,
    renamed_same_second_before,
)
"""Every rule once (the cassettes and the benchmark cycle through them)."""

REPO_FILE = """labels:
  needs_refinement: {name: 'status: needs info'}
dataset:
  needs_info_labels: [more details please]
  accepted_labels: [ready]
  triager_bots: ['triage-helper[bot]']
"""
"""The repository file the scenarios assume (``configured_*`` use its labels, the gate's
needs-refinement label has the README's example name, and one bot triages)."""


def one(builder: Builder, number: int) -> Scenario:
    """The scenario ``builder`` makes for issue ``number`` (opened ``number`` hours after
    :data:`T0`), its row's title and body filled in from the issue when the builder left
    them to it."""
    scenario = builder(number, T0 + timedelta(hours=number))
    if not scenario.title:
        scenario.title = scenario.item["title"]
    if not scenario.body and scenario.expected:
        scenario.body = scenario.item["body"] or ""
    return scenario


def never_edited(scenario: Scenario) -> dict[str, Any]:
    """The GraphQL ``Issue`` of a body never edited (what GitHub answers for one)."""
    return {
        "id": scenario.item["node_id"],
        "lastEditedAt": None,
        "includesCreatedEdit": False,
        "userContentEdits": {"totalCount": 0, "nodes": []},
    }


def world(count: int, *, first: int = 1) -> list[Scenario]:
    """``count`` closed issues numbered from ``first``, cycling through :data:`BUILDERS`
    from the first, the newest the highest number, an hour apart (GitHub lists them newest
    first)."""
    return [one(BUILDERS[i % len(BUILDERS)], first + i) for i in range(count)]
