"""A security review's findings as rows of the reliability table: one row per finding (or per
example the review names), each running the real code on the hostile input and returning the
outcome in the words of its ``expected`` column. ``tests/reliability/test_security_rows.py`` asserts
them all
and ``benchmarks/reliability.py`` prints them. Markdown is judged by a real CommonMark renderer
(tests/support/markdown_oracle.py), stdout as a GitHub runner reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from click.testing import CliRunner

from bot import runner
from bot.audit.auditor import AuditRejected, AuditResult
from bot.audit.contract import render_sections
from bot.audit.pipeline import render_audit_plan
from bot.audit.plan import AuditPlan
from bot.audit.pr_comment import COMMENT_LIMIT, render_audit_comment
from bot.audit.ranges import parse_range_spec
from bot.audit.selection import Segment, Selection, Skipped
from bot.cli import main
from bot.clients.github_port import PullRef
from bot.commands.handlers import history_reply
from bot.config import Settings
from bot.errors import BotError, InvalidRange, StoreError
from bot.events import load_payload, route_event
from bot.history.store import AuditRow, Store
from bot.neutralise import escape_special_tokens, neutralise, neutralise_block
from tests.support import ROOT, FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.reliability import Row
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY
from tests.support.workflow_expr import concurrency

SECURITY = "security review"
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
_BOT_TAGS = {"h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "details",
             "summary", "ul", "ol", "li", "pre", "strong", "em"}  # fmt: skip


def _result(path: str, body: str) -> AuditResult:
    sections = {
        "bottom_line": "allowed()",
        "verified_defects": f"- Line 1: {body}",
        "non_blocking_risks": body,
        "assumptions": "None",
        "future_improvements": "None",
        "verdict": "FIX",
        "confidence": "High",
    }
    markdown = render_sections(sections)  # the canonical text, as the auditor keeps it
    return AuditResult(Segment(path, 1, 3), False, "m", "v", 1, 1, 1.0, markdown, sections, "FIX",
                       "High")  # fmt: skip


def _comment_as_rendered(paths: list[str], body: str = "x") -> str:
    """The PR comment for one accepted audit per path, as a reader sees it."""
    outcomes: list[AuditResult | AuditRejected] = [_result(p, body) for p in paths]
    selection = Selection((), tuple(Skipped(p, "skip glob") for p in paths))
    comment = render_audit_comment(head_sha=SHA, selection=selection, outcomes=outcomes, model="m")
    rendered = render(comment)
    # <code class="language-x"> of a fence and <ol start> are the only attributes markdown makes
    foreign = sorted(set(rendered.tags) - _BOT_TAGS) + sorted(
        rendered.attributes - {"class", "start"}
    )
    end = [text for _, text in rendered.blocks[-2:]]
    last = len(end) == 2 and end[0].startswith("Coverage:") and end[1].startswith("Model:")
    return (
        f"foreign tags/attributes {foreign or 0}; mentions {len(rendered.mentions)}; "
        f"details {rendered.tags['details']}/{len(paths)}; cells {rendered.tags['td']}/"
        f"{6 * len(paths)}; coverage, then the model footer, last: {last}"
    )


def _inline_as_rendered(text: str) -> str:
    rendered = render(f"before {neutralise(text)} after")
    tags, attributes = sorted(rendered.tags), len(rendered.attributes)
    return f"tags {tags}; attributes {attributes}; mentions {len(rendered.mentions)}"


def _plan_command_lines(path: str) -> str:
    """Lines of the dry-run audit plan a runner would read as workflow commands."""
    outcome = AuditRejected(Segment(path, 1, 2), True, "m", "v", 0, 0, 0.0, (), "truncated")
    selection = Selection((), (Skipped(path, f"unreadable: {path}"),))
    comment = render_audit_comment(
        head_sha=SHA, selection=selection, outcomes=(outcome,), model="m"
    )
    plan = AuditPlan(PullRef("o/r", 2, SHA), selection, (outcome,), (), comment, "json")
    text = render_audit_plan(plan)
    commands = [ln for ln in text.splitlines() if ln.lstrip().startswith("::") or "##[" in ln]
    return f"command lines {len(commands)}"


def _event_file(data: bytes | None, *, device: str | None = None) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(device) if device else Path(tmp) / "event.json"
        if data is not None:
            path.write_bytes(data)
        try:
            route_event("issues", load_payload(path))
        except BotError as exc:
            return f"{type(exc).__name__} exit {exc.exit_code}: {str(exc).split(':')[0]}"
    return "accepted"


def _payload_with(number: int | None = None, repo: str | None = None) -> str:
    payload: dict[str, Any] = load_webhook("issues.opened.18")
    if number is not None:
        payload["issue"]["number"] = number
    if repo is not None:
        payload["repository"]["full_name"] = repo
    return _event_file(json.dumps(payload).encode())


def _cli(args: list[str], **env: str) -> str:
    result = CliRunner().invoke(main, args, env=env)
    return f"exit {result.exit_code}"


def _ollama_host(value: str) -> str:
    try:
        Settings.resolve({"ollama_host": value}, {})
    except BotError as exc:
        return f"{type(exc).__name__} exit {exc.exit_code}"
    return "accepted"


def _redacted(token: str) -> str:
    """A failing run whose error echoes the stripped token (as the client sends it)."""
    from bot.cli import _redact

    old = os.environ.get("GITHUB_TOKEN")
    os.environ["GITHUB_TOKEN"] = token
    try:
        echoed = _redact(f"401 for token {token.strip()} and {token}")
    finally:
        if old is None:
            del os.environ["GITHUB_TOKEN"]
        else:
            os.environ["GITHUB_TOKEN"] = old
    return f"token forms left: {echoed.count(token.strip())}"


def _history_size() -> str:
    store = Store(":memory:")
    tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
    store.record_audits(
        [AuditRow("o/r", 7, SHA, "d/" * 2000 + f"{i}.py", 1, 2, "GO", "High", *tail)
         for i in range(50)]
    )  # fmt: skip
    reply = history_reply(store, "o/r", 50)
    store.close()
    size = "<" if len(reply) < COMMENT_LIMIT else "≥"
    return f"{size} {COMMENT_LIMIT} chars; rows {reply.count('| GO |')}"


def _range(spec: str, changed: tuple[str, ...]) -> str:
    try:
        segment = parse_range_spec(spec, changed)
    except InvalidRange as exc:
        return f"InvalidRange: {exc}"
    return f"accepted: {segment.path.encode()!r}:{segment.start}-{segment.end}"


NFD = "re\u0301sume\u0301.py"
TOKENS = ("[INST]", "<<SYS>>", "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<unused7>",
          "<start_of_turn>", "<|im_start|>", "[TOOL_CALLS]")  # fmt: skip
PLAIN = ("[BUG]", "<b>")  # an issue-title prefix and an HTML tag: not template tokens


def _template_tokens() -> str:
    escaped = escape_special_tokens(" ".join(TOKENS + PLAIN))
    hit = sum(token not in escaped for token in TOKENS)
    kept = " ".join(token for token in PLAIN if token in escaped)
    return f"escaped {hit} of {len(TOKENS)}; left as written: {kept}"


ROWS: list[Row] = [
    # Finding 1 (high): a changed file's name in the PR comment.
    Row(SECURITY, "1: PR files named x<img src=//evil/p.png>.py, a</details>b, @org/team, a|b",
        "foreign tags/attributes 0; mentions 0; details 4/4; cells 24/24; coverage, then the "
        "model footer, last: True",
        lambda: _comment_as_rendered(["x<img src=//evil/p.png>.py", "a</details>b.py",
                                      "@org/team.py", "a|b.py"])),
    # Finding 3 (medium): the neutraliser's code spans against CommonMark's.
    Row(SECURITY, "3: \\``x`@team <img …>` on one line (model text)",
        "tags ['code', 'p']; attributes 0; mentions 0",
        lambda: _inline_as_rendered("\\``x`@team <img src=//evil/p.png>`")),
    Row(SECURITY, "3: a lone backtick, then `<img …>` on the next line (model text)",
        "foreign tags/attributes 0; mentions 0; details 1/1; cells 6/6; coverage, then the "
        "model footer, last: True",
        lambda: _comment_as_rendered(["a.py"], "x `\n`<img src=//evil/p.png>` @team")),
    Row(SECURITY, "3: an unclosed ``` in model text before the bot's </details> and coverage",
        "foreign tags/attributes 0; mentions 0; details 1/1; cells 6/6; coverage, then the "
        "model footer, last: True",
        lambda: _comment_as_rendered(["a.py"], "see\n```python\nprint(1)\n</details>")),
    # Finding 4 (medium): workflow commands from untrusted text on stdout.
    Row(SECURITY, "4: a file named 'x\\n::set-output name=verdict::VALID' in the dry-run plan",
        "command lines 0", lambda: _plan_command_lines("x\n::set-output name=verdict::VALID")),
    Row(SECURITY, "4: a file named 'a ##[set-output name=v;]x' (the runner's v1 prefix)",
        "command lines 0", lambda: _plan_command_lines("a ##[set-output name=v;]x\n::error::y")),
    # Low findings.
    Row(SECURITY, "low: GITHUB_EVENT_PATH=/dev/zero", "EventError exit 3: event file is a "
        "character device, not a regular file", lambda: _event_file(None, device="/dev/zero"),
        5000, 64),
    Row(SECURITY, "low: issue number 2^63 in the payload",
        "EventError exit 3: malformed issues payload", lambda: _payload_with(number=2**63)),
    Row(SECURITY, "low: repository full_name '../..'", "EventError exit 3: malformed issues "
        "payload", lambda: _payload_with(repo="../..")),
    Row(SECURITY, "low: repository full_name 'o/..'", "EventError exit 3: malformed issues "
        "payload", lambda: _payload_with(repo="o/..")),
    Row(SECURITY, "low: --repo o/.. for `history`", "exit 2",
        lambda: _cli(["history", "--repo", "o/..", "--db", "/nonexistent/t.db"])),
    Row(SECURITY, "low: --ollama-host http://u:p@127.0.0.1:notaport", "ConfigError exit 2",
        lambda: _ollama_host("http://u:p@127.0.0.1:notaport")),
    Row(SECURITY, "low: a token with a trailing newline, echoed stripped", "token forms left: 0",
        lambda: _redacted("ghp_" + "Zk4Qm8Tr2Vx6Wb1Nc5Hd9Jf3Lp7Gs0Ye4Ua8\n")),
    Row(SECURITY, "low: /audit_history 50 with 4,000-character paths",
        f"< {COMMENT_LIMIT} chars; rows 50", _history_size),
    Row(SECURITY, "low: /audit a:b.py:1-2", "accepted: b'a:b.py':1-2",
        lambda: _range("a:b.py:1-2", ("a:b.py",))),
    Row(SECURITY, "low: /audit of an NFD file name typed in NFC",
        f"accepted: {NFD.encode()!r}:1-2", lambda: _range("r\u00e9sum\u00e9.py:1-2", (NFD,))),
    Row(SECURITY, "low: template tokens of other families in issue text (7 families)",
        "escaped 7 of 7; left as written: [BUG] <b>", _template_tokens),
]  # fmt: skip


# --- finding 2: the action's venv key covers every installed file ---------------------------------
def _venv_keys() -> str:
    """Copy the action's installed files, print the key, edit a file under bot/audit/ and a
    prompt (each must change it) and a test (must not)."""
    with tempfile.TemporaryDirectory() as tmp:
        action = Path(tmp) / "action"
        shutil.copytree(ROOT / "bot", action / "bot", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md", "requirements.lock", "scripts/action_venv.sh"):
            (action / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, action / name)

        def key() -> str:
            script = action / "scripts" / "action_venv.sh"
            env = dict(os.environ, ACTION_PATH=str(action))
            done = subprocess.run(["bash", str(script), "--print-key"], env=env,
                                  capture_output=True, text=True, check=True)  # fmt: skip
            return done.stdout.strip()

        before = key()
        with (action / "bot" / "audit" / "contract.py").open("a") as fh:
            fh.write("# a security fix\n")
        audit = key()
        with (action / "bot" / "prompts" / "validator.md").open("a") as fh:
            fh.write("\n")
        prompt = key()
        (action / "tests").mkdir()
        (action / "tests" / "t.py").write_text("x = 1\n")
        tests = key()
    return (
        f"changed by bot/audit/: {audit != before}; by a prompt: {prompt != audit}; "
        f"by tests/: {tests != prompt}"
    )


# --- finding 5: who set a gate label is GitHub's answer -------------------------------------------
VALID, NEEDS = VALID_REPLY, NEEDS_REPLY  # VALID stands on COMPLETE_BODY (tests/support/replies.py)


def _gate(tmp: Path, github: FakeGitHub, model: FakeChatModel, action: str, labels: list[str],
          body: str, db: str = "t.db") -> str:  # fmt: skip
    payload = load_webhook("issues.opened.18" if action == "opened" else "issues.edited.7")
    payload["action"] = action
    payload["changes"] = {"body": {"from": "older"}}
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": n} for n in labels]
    settings = Settings(github_token="t", event_name="issues",
                        event_path=write_payload(tmp, payload), db_path=tmp / db)  # fmt: skip
    with (
        mock.patch.object(runner, "make_github", return_value=github),
        mock.patch.object(runner, "make_chat_model", return_value=model),
    ):
        report = runner.run_event(settings)
    return "skipped as hand-set" if "by hand" in report.text else "judged"


def _lost_row() -> str:
    """The labels are written, the decision row is not (a held lock); the next edit."""
    github, model = FakeGitHub(), FakeChatModel().enqueue(VALID, NEEDS, VALID)
    with tempfile.TemporaryDirectory() as tmp:
        _gate(Path(tmp), github, model, "opened", ["bug"], COMPLETE_BODY)
        failing = mock.Mock(side_effect=StoreError("database is locked"))
        # exit 5 (StoreError) after the labels were written
        with mock.patch.object(Store, "record_gate", failing), contextlib.suppress(StoreError):
            _gate(Path(tmp), github, model, "edited", ["bug", "ready-for-dev"], "b")
        edited = f"{COMPLETE_BODY}\nIt is the same on the main branch."
        after = _gate(Path(tmp), github, model, "edited", ["bug", "needs-refinement"], edited)
    return f"next edit {after}; labels {github.issue_labels[1]}"


def _empty_store() -> str:
    """An ephemeral runner: a person's label, and a fresh store in the job."""
    github, model = FakeGitHub(), FakeChatModel().enqueue(VALID)
    github.label_by_hand(1, "needs-refinement", login="Codertocat")
    with tempfile.TemporaryDirectory() as tmp:
        outcome = _gate(Path(tmp), github, model, "edited", ["needs-refinement"], "x", "job.db")
    return f"{outcome}; labels {github.issue_labels[1]}; model calls {len(model.history)}"


# --- finding 6: concurrency groups ----------------------------------------------------------------
def _groups() -> str:
    pr = load_webhook("pull_request.opened.0")
    comment = load_webhook("issue_comment.created.0")
    comment["issue"]["number"] = pr["number"]
    comment["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/2"}
    audit, cancels = concurrency("pull_request_target", pr)
    command, command_cancels = concurrency("issue_comment", comment)
    issue, issue_cancels = concurrency("issues", load_webhook("issues.opened.18"))
    return (
        f"comment shares the audit's group: {command == audit}; distinct groups "
        f"{len({audit, command, issue})}/3; cancel in progress: audit {cancels}, "
        f"comment {command_cancels}, issue {issue_cancels}"
    )


# --- low: the store -------------------------------------------------------------------------------
def _dry_run_store() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "data" / "triage.db"
        issue = load_webhook("issues.opened.18")
        issue["issue"]["body"] = COMPLETE_BODY
        payload = write_payload(Path(tmp), issue)
        settings = Settings(dry_run=True, event_name="issues", event_path=payload, db_path=db)
        model = FakeChatModel().enqueue(VALID)
        with (
            mock.patch.object(runner, "make_chat_model", return_value=model),
            mock.patch.object(runner, "make_github", return_value=FakeGitHub()),  # no file
        ):
            runner.run_event(settings)
        return f"store created: {db.exists()}; folder created: {db.parent.exists()}"


def _newer_store() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "t.db"
        Store(db).close()
        conn = sqlite3.connect(db)
        conn.execute(
            "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
            "values ('f', '0999_from_the_future', '2027-01-01')"
        )
        conn.commit()
        conn.close()
        try:
            Store(db).close()
        except StoreError as exc:
            return f"StoreError exit {exc.exit_code} at open: {'newer triage-bot' in str(exc)}"
    return "opened"


def _private_store() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "new" / "t.db"
        old = os.umask(0o022)
        try:
            store = Store(db)
            store.record_gate(runner_row())
            store.close()
        finally:
            os.umask(old)
        modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in db.parent.iterdir()}
        folder = oct(stat.S_IMODE(db.parent.stat().st_mode))
    return f"folder {folder}; files {sorted(set(modes.values()))}"


_READ_ONLY_CHILD = r"""
import json, sys
from pathlib import Path
from click.testing import CliRunner
from bot.cli import main
db = Path(sys.argv[1])
try:
    (db.parent / "probe").touch()
    print("the folder is writable: nothing shown")
except OSError:
    shown = []
    for command in ("history", "stats"):
        r = CliRunner().invoke(main, [command, "--repo", "o/r", "--db", str(db), "--json"])
        shown.append(f"{command} exit {r.exit_code}")
    print(f"{', '.join(shown)}; weeks {len(json.loads(r.stdout)) if r.exit_code == 0 else '-'}")
"""


def _read_only_folder() -> str:
    """``history`` and ``stats`` on a store in a folder the process cannot write, in a child
    process (as root under ``unshare --user``: root's override is gone, the mode binds; the
    child first checks it cannot write there). Before 048e865: exit 5."""
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ro"
        folder.mkdir()
        store = Store(folder / "t.db")
        store.record_gate(runner_row())
        store.record_audits([AuditRow("o/r", 7, SHA, "a.py", 1, 2, "GO", "High", False,
                                      "markdown", "m", "v", 1, 1, 1.0, "")])  # fmt: skip
        store.close()
        folder.chmod(0o500)
        prefix = ["unshare", "--user"] if os.geteuid() == 0 else []
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            done = subprocess.run(
                [*prefix, sys.executable, "-c", _READ_ONLY_CHILD, str(folder / "t.db")],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            files = sorted(os.listdir(folder))
        finally:
            folder.chmod(0o700)
    return f"{done.stdout.strip() or done.stderr.strip()[-200:]}; files {files}"


def runner_row() -> Any:
    from bot.history.store import GateRow

    return GateRow("o/r", 1, "issues.opened", "VALID", "ready-for-dev", "r", None, "m", "v",
                   1, 1, 1.0)  # fmt: skip


ROWS += [
    Row(SECURITY, "2: an upgrade changes one file under bot/audit/, then a prompt, then tests/",
        "changed by bot/audit/: True; by a prompt: True; by tests/: False", _venv_keys, 20_000),
    Row(SECURITY, "5: the decision row is lost after the labels were written; the next edit",
        "next edit judged; labels ['ready-for-dev']", _lost_row),
    Row(SECURITY, "5: ephemeral runner (empty store), a person's gate label; an edit",
        "skipped as hand-set; labels ['needs-refinement']; model calls 0", _empty_store),
    Row(SECURITY, "6: a comment command on a PR while its audit is queued",
        "comment shares the audit's group: False; distinct groups 3/3; cancel in progress: "
        "audit True, comment False, issue False", _groups),
    Row(SECURITY, "low: a dry run with no store yet", "store created: False; folder created: "
        "False", _dry_run_store),
    Row(SECURITY, "low: history and stats on a store in a read-only folder",
        "history exit 0, stats exit 0; weeks 1; files ['t.db']", _read_only_folder, 20_000),
    Row(SECURITY, "low: a store migrated by a newer triage-bot", "StoreError exit 5 at open: True",
        _newer_store),
    Row(SECURITY, "low: a new store's folder and files (umask 022)",
        "folder 0o700; files ['0o600']", _private_store),
]  # fmt: skip


# --- a second look: what a security review found after the first fix ---------------------------
def _links_in_model_text(text: str) -> str:
    rendered = render(neutralise_block(text))
    return (
        f"links {len(rendered.github_links)}; fence languages "
        f"{sorted(rendered.attributes) or 0}; mentions {len(rendered.mentions)}"
    )


def _history_json() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "t.db"
        store = Store(db)
        tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
        path = "x ##[set-output name=verdict;]VALID\n::error::y \x1b[2J"
        store.record_audits([AuditRow("o/r", 7, SHA, path, 1, 2, "GO", "High", *tail)])
        store.close()
        out = CliRunner().invoke(main, ["history", "--repo", "o/r", "--db", str(db), "--json"])
    commands = [ln for ln in out.stdout.splitlines() if ln.lstrip().startswith("::") or "##[" in ln]
    same = json.loads(out.stdout)[0]["path"] == path
    escapes = out.stdout.count(chr(27))
    return (
        f"exit {out.exit_code}; command lines {len(commands)}; ESC {escapes}; "
        f"path read back: {same}"
    )


def _reply_on_stdout() -> str:
    """``/audit_history`` by an admin on a PR whose stored path holds ``##[`` and a line break:
    the lines of the run's log a runner would read as workflow commands."""
    path = "x ##[set-output name=verdict;]VALID\n::error::y"
    with tempfile.TemporaryDirectory() as tmp:
        payload = load_webhook("issue_comment.created.0")
        payload["comment"]["body"] = "/audit_history 5"
        store = Store(Path(tmp) / "t.db")
        tail = (False, "markdown", "m", "v", 1, 1, 1.0, "")
        repo = payload["repository"]["full_name"]
        store.record_audits([AuditRow(repo, 7, SHA, path, 1, 2, "GO", "High", *tail)])
        store.close()
        settings = Settings(github_token="t", event_name="issue_comment",
                            event_path=write_payload(Path(tmp), payload),
                            db_path=Path(tmp) / "t.db")  # fmt: skip
        github = FakeGitHub(permissions={payload["comment"]["user"]["login"]: "admin"})
        with mock.patch.object(runner, "make_github", return_value=github):
            text = runner.run_event(settings).text
    commands = [ln for ln in text.splitlines() if ln.lstrip().startswith("::") or "##[" in ln]
    return f"command lines {len(commands)}; replied {len(github.comments[1])}"


def _fifty_invisible_paths() -> str:
    path = "\U000e0041" * 120 + ".py"
    outcomes: list[AuditResult | AuditRejected] = [_result(f"{i}{path}", "x") for i in range(50)]
    skipped = tuple(Skipped(f"bin/{i}{path}", "no patch") for i in range(3000))
    body = render_audit_comment(
        head_sha=SHA, selection=Selection((), skipped), outcomes=outcomes, model="m"
    )
    last = render(body).blocks[-2][1]  # the model footer follows
    size = "≤" if len(body) <= COMMENT_LIMIT else ">"
    return f"{size} {COMMENT_LIMIT}; coverage last: {last.startswith('Coverage: 50')}"


ROWS += [
    Row(SECURITY, "review: model text with #1, owner/repo#3, GH-2, a SHA, :rocket:",
        "links 0; fence languages 0; mentions 0",
        lambda: _links_in_model_text("see #1, GH-2, torvalds/linux#3, commit "
                                     "ec26c3e57ca3a959ca5aad62de7213c562f8c821 :rocket:")),
    Row(SECURITY, "review: a ```mermaid fence in model text (github.com draws it)",
        "links 0; fence languages 0; mentions 0",
        lambda: _links_in_model_text("```mermaid\nflowchart LR\n  A[safe to merge]-->B\n```")),
    Row(SECURITY, "review: 50 audits of 120 invisible characters per path, 3,000 skipped",
        f"≤ {COMMENT_LIMIT}; coverage last: True", _fifty_invisible_paths),
    Row(SECURITY, "review: /audit_history's reply in the run's log, a path holding ##[ and \\n",
        "command lines 0; replied 1", _reply_on_stdout),
    Row(SECURITY, "review: `history --json` of a path holding ##[, ::error and ESC",
        "exit 0; command lines 0; ESC 0; path read back: True", _history_json),
]  # fmt: skip
