"""Every place untrusted text is posted or printed, judged by a real renderer.

The PR comment (table, ``<summary>``, sections, coverage line), the ``/audit_history`` reply
and ``/audit``'s range refusal, the step summaries, and the plan and command replies printed on
stdout are built from hostile paths, model text, model names, label names, skip reasons and
ranges, then rendered with CommonMark + tables + raw HTML (tests/support/markdown_oracle.py) or read
as
a GitHub runner reads a step's output.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.audit.auditor import AuditRejected, AuditResult
from bot.audit.pipeline import render_audit_plan, render_audit_summary
from bot.audit.plan import AuditPlan
from bot.audit.pr_comment import COMMENT_LIMIT, MARKER, audited_head, render_audit_comment
from bot.audit.selection import Segment, Selection, Skipped
from bot.chat import CallUsage
from bot.clients.github_port import ChangedFile, PullRef
from bot.commands.comment import run_comment
from bot.commands.handlers import history_reply
from bot.config import Settings
from bot.context import JobContext
from bot.events import IssueCommentEvent, route_event
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import READY, plan_labels
from bot.gate.pipeline import render_gate_plan, render_gate_summary
from bot.gate.plan import GatePlan
from bot.gate.types import GateDecision
from bot.history.store import AuditRow, Store
from bot.neutralise import ZWSP
from bot.run_report import RunReport
from tests.support import FakeChatModel, load_webhook
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ

SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
PIECES = [
    *"<>!@[]()`\\-*_~|#$:.&\n\r\t ", "img src=//evil/p.png", "</details>", "<summary>",
    "@org/team", "```", "~~~", "::error::x",
    "##[set-output name=verdict;]VALID", "%0A", "http://evil.example", "www.evil.example",
    "<!-- triage-bot:audit -->", "- ", "1. ", "> ", "# ", "|---|", "src/app.py", "\u2028",
]  # fmt: skip
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)
PATHS = HOSTILE.map(lambda s: s or "x")

COMMENT_TAGS = {
    "h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "details", "summary",
    "ul", "ol", "li", "pre", "strong", "em",
}  # fmt: skip


FIRST = CallUsage("auditor", "first", 900.0, 300, 80, 100)
REPAIR = CallUsage("auditor", "repair", 700.0, 400, 70)  # a backend that does not say


def _result(path: str, body: str, verdict: str = "FIX") -> AuditResult:
    sections = {
        "bottom_line": body,
        "verified_defects": f"- Line 1: {body}",
        "non_blocking_risks": body,
        "assumptions": "None",
        "future_improvements": body,
        "verdict": verdict,
        "confidence": "High",
    }
    return AuditResult(Segment(path, 1, 3), False, "m", "v", 1, 1, 1.0, body, sections, verdict,
                       "High", calls=(FIRST, REPAIR))  # fmt: skip


@FUZZ
@given(st.lists(st.tuples(PATHS, HOSTILE), max_size=3), PATHS, PATHS, HOSTILE, HOSTILE)
def test_the_pr_comment_keeps_its_structure_whatever_the_text(
    accepted: list[tuple[str, str]], rejected: str, skipped: str, reason: str, model: str
) -> None:
    outcomes: list[AuditResult | AuditRejected] = [_result(p, b) for p, b in accepted]
    outcomes.append(AuditRejected(Segment(rejected, 1, 2), True, "m", "v", 0, 0, 0.0, (), "x"))
    selection = Selection((), (Skipped(skipped, reason),))
    body = render_audit_comment(head_sha=SHA, selection=selection, outcomes=outcomes, model=model)
    assert len(body) <= COMMENT_LIMIT
    assert body.startswith(MARKER)
    assert audited_head(body) == SHA
    rendered = render(body)
    assert set(rendered.tags) <= COMMENT_TAGS, set(rendered.tags) - COMMENT_TAGS
    assert set(rendered.attributes) <= {"start", "class"}
    assert not rendered.mentions
    assert not rendered.github_links
    assert len(rendered.comments) == 2  # the bot's two hidden markers, nothing forged
    assert rendered.tags["details"] == len(accepted)
    if accepted:
        assert rendered.tags["tr"] == len(accepted) + 1
        assert rendered.tags["td"] == 6 * len(accepted)
    assert rendered.blocks[-2][0] == "p"
    assert rendered.blocks[-2][1].startswith("Coverage: ")
    assert rendered.blocks[-1][1].startswith("Model: ")  # the footer: model, prompt version
    assert rendered.blocks[-1][1].endswith(" · prompt: v")


@FUZZ
@given(st.lists(PATHS, min_size=1, max_size=4))
def test_the_history_reply_is_one_code_block(paths: list[str]) -> None:
    store = Store(":memory:")
    tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
    store.record_audits([AuditRow("o/r", 7, SHA, p, i + 1, i + 2, "GO", "High", *tail)
                         for i, p in enumerate(paths)])  # fmt: skip
    reply = history_reply(store, "o/r", 10)
    store.close()
    rendered = render(reply)
    assert rendered.tags == {"p": 1, "pre": 1, "code": 1}
    assert not rendered.mentions


def test_a_50_row_history_of_long_paths_fits_one_comment() -> None:
    """``/audit_history 50`` with long paths once made a 74,000-character reply."""
    store = Store(":memory:")
    tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
    store.record_audits(
        [AuditRow("o/r", 7, SHA, "d/" * 2000 + f"{i}.py", 1, 2, "GO", "High", *tail)
         for i in range(50)]
    )  # fmt: skip
    reply = history_reply(store, "o/r", 50)
    store.close()
    assert len(reply) < COMMENT_LIMIT
    assert reply.count("| GO |") == 50  # paths shortened to their end, every row listed


def _gate_plan(reason: str, model: str, label_on_issue: str) -> GatePlan:
    decision = GateDecision(
        "VALID", reason, None, model, "validator@x", 1, 1, 1.0, 1.0,
        prepare_issue("t", "b", max_body_chars=6000),
        calls=(CallUsage("validator", "first", 1.0, 1, 1, 0),),
    )  # fmt: skip
    labels = plan_labels([label_on_issue], READY)
    return GatePlan("issues.opened", "o/r", 1, True, decision, labels)


def _audit_plan(path: str, reason: str, body: str) -> AuditPlan:
    pull = PullRef("o/r", 2, SHA)
    outcomes = (_result(path, body), AuditRejected(Segment(path, 1, 2), True, "m", "v", 0, 0,
                                                   0.0, (), "truncated"))  # fmt: skip
    selection = Selection((), (Skipped(path, reason, Segment(path, 4, 5)),))
    comment = render_audit_comment(head_sha=SHA, selection=selection, outcomes=outcomes, model="m")
    return AuditPlan(pull, selection, outcomes, (), comment, "json")


@FUZZ
@given(HOSTILE, HOSTILE, HOSTILE, PATHS)
def test_step_summaries_render_only_the_bots_markup(
    reason: str, model: str, label: str, path: str
) -> None:
    for summary in (
        render_gate_summary(_gate_plan(reason, model, label), applied=True),
        render_audit_summary(_audit_plan(path, reason, model), applied=False),
    ):
        rendered = render(summary)
        assert set(rendered.tags) <= {"h3", "p", "table", "thead", "tbody", "tr", "th", "td",
                                      "code", "strong", "blockquote"}  # fmt: skip
        assert not rendered.attributes
        assert not rendered.mentions
        assert set(rendered.github_links) <= {"#1", "#2"}  # the bot's own "#N"
        # the gate's table (6 cells) and its calls table (6 cells, the call and the total);
        # the audit's calls table (7 cells, with the segment: two calls and the total)
        assert rendered.tags["td"] in (6 + 12, 7 * 3)


def _command_lines(text: str) -> list[str]:
    """Lines a GitHub runner would read as workflow commands (``::`` after leading
    whitespace, or the older ``##[`` anywhere in a line)."""
    return [line for line in text.splitlines() if line.lstrip().startswith("::") or "##[" in line]


@FUZZ
@given(HOSTILE, HOSTILE, PATHS, HOSTILE)
def test_the_plan_on_stdout_holds_no_workflow_command(
    reason: str, model: str, path: str, body: str
) -> None:
    """A newline in a file name or model text cannot start a line."""
    gate = render_gate_plan(_gate_plan(reason, model, "x"))
    audit = render_audit_plan(_audit_plan(path, reason, body))
    assert _command_lines(gate) == []
    assert _command_lines(audit) == []
    assert len(gate.splitlines()) == 8 + 3  # the calls: head, the one call, the total
    labels = ("triage-bot:", "selection:", "  segment ", "  skipped ", "accepted:", "calls:",
              "  call auditor ", "  total: ", "comment", "  | ")  # fmt: skip
    assert all(line.startswith(labels) for line in audit.splitlines())


def test_a_file_name_with_a_newline_cannot_print_a_command() -> None:
    """The issue's example: a PR file named ``x\\n::set-output name=verdict::VALID``."""
    audit = render_audit_plan(_audit_plan("x\n::set-output name=verdict::VALID", "r", "b"))
    assert _command_lines(audit) == []
    assert "x\\n::set-output name=verdict::VALID" in audit  # the line break shown, not made


# --- a second look: what a security review found after the first fix ----------------------------
def test_fifty_audits_of_invisible_paths_keep_the_coverage_line() -> None:
    """Each U+E0041 shows as ten characters in a code span: 50 rows of 120 of them once pushed
    the comment past the limit and the final cut took the coverage line."""
    path = "\U000e0041" * 120 + ".py"
    outcomes: list[AuditResult | AuditRejected] = [_result(f"{i}{path}", "x") for i in range(50)]
    skipped = tuple(Skipped(f"bin/{i}{path}", "no patch") for i in range(3000))
    body = render_audit_comment(
        head_sha=SHA, selection=Selection((), skipped), outcomes=outcomes, model="m"
    )
    assert len(body) <= COMMENT_LIMIT
    assert render(body).blocks[-2][1].startswith("Coverage: 50 segment(s) audited")


def test_one_oversized_audit_does_not_push_the_others_out() -> None:
    """Sections of 4,000 backticks grow to 20,000 characters of ``&#96;``: each section is
    capped on what is posted, so three audits still show."""
    huge = "` " * 4000
    outcomes: list[AuditResult | AuditRejected] = [
        _result("a.py", "fine"), _result("b.py", huge), _result("c.py", "fine")
    ]  # fmt: skip
    body = render_audit_comment(
        head_sha=SHA, selection=Selection((), ()), outcomes=outcomes, model="m"
    )
    assert render(body).tags["details"] == 3
    assert "not shown" not in body


# --- command replies: on GitHub and on stdout (inert markdown, no workflow commands) --------
AUTHOR = "Codertocat"  # the commenter in issue_comment.created.0 (on #1)


def _job(github: FakeGitHub, paths: list[str]) -> JobContext:
    """A job as the runner builds one for a command reply: the fake GitHub, whose PR 1 changes
    one file named with a character no hostile text holds (so the real ``/audit`` range rules
    refuse every hostile range), and a store holding one audit per hostile path."""
    github.files[1] = [ChangedFile("\u20ac.py", "modified", "@@ -1 +1 @@\n+x = 1")]

    def store(settings: Settings, *, read_only: bool) -> Store:
        made = Store(":memory:")
        tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
        repo = "Codertocat/Hello-World"
        made.record_audits(
            [AuditRow(repo, 1, SHA, p, i + 1, i + 2, "GO", "High", *tail)
             for i, p in enumerate(paths)]
        )  # fmt: skip
        return made

    return JobContext.build(
        Settings(),
        make_github=lambda settings, **k: github,
        make_store=store,
        make_model=lambda settings, role: FakeChatModel(),  # a refused range calls no model
        model_concurrency=lambda settings: 1,
    )


def _command(body: str, paths: list[str]) -> tuple[str, RunReport]:
    """``body`` commented on PR 1 by an admin: (the reply posted, the run's report)."""
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    github = FakeGitHub(permissions={AUTHOR: "admin"})
    github.heads[1] = SHA
    with _job(github, paths) as job:
        report = run_comment(event, job)
    (reply,) = [c.body for c in github.comments[1]]
    return reply, report


NO_SPACE = HOSTILE.map(lambda s: "".join(s.split()) or "x")


@FUZZ
@given(NO_SPACE)
def test_the_audit_range_refusal_is_one_inert_paragraph(path: str) -> None:
    """``/audit PATH:1-2`` with the commenter's hostile path: the refusal quotes it inert."""
    reply, report = _command(f"/audit {path}:1-2", [])
    rendered = render(reply)
    assert set(rendered.tags) <= {"p", "code"}, rendered.html
    assert rendered.tags["p"] == 1
    assert not rendered.attributes
    assert not rendered.mentions
    assert not rendered.github_links
    assert _command_lines(report.text) == []


@FUZZ
@given(st.lists(PATHS, min_size=1, max_size=4))
def test_a_command_reply_on_stdout_holds_no_workflow_command(paths: list[str]) -> None:
    """The run's log quotes the ``/audit_history`` reply line by line through ``log_value``:
    a stored path with a line break or ``##[`` cannot make a workflow command."""
    reply, report = _command("/audit_history 10", paths)
    assert _command_lines(report.text) == []
    lines = report.text.splitlines()
    assert lines[1] == "reply:"
    assert all(line.startswith("  | ") for line in lines[2:])
    assert len(lines[2:]) == len(reply.splitlines())


def test_a_stored_path_holding_a_v1_command_is_escaped_in_the_log() -> None:
    """Before: the reply was printed as posted, and its code block kept ``##[set-output …]``
    (only the ``::stop-commands::`` wrapper stood between it and the runner)."""
    _, report = _command("/audit_history 10", ["x ##[set-output name=verdict;]VALID\n::error::y"])
    assert f"x ##{ZWSP}[set-output name=verdict;]VALID\\n::error::y:1-2" in report.text
    assert _command_lines(report.text) == []
