"""Record the dataset cassettes of the later rules, the ``dataset --duplicates`` one, the
settle cassettes and the ``index`` one, from the loopback GitHub:

    .venv/bin/python scripts/record_dataset_cassettes.py            # every one below
    .venv/bin/python scripts/record_dataset_cassettes.py NAME ...   # cassettes/NAME.yaml only

Each dataset cassette is one ``triage-bot dataset`` run (and each settle cassette one
``triage-bot settle`` run over a store holding the bot's decisions) (the CLI, in process) against
tests/support/dataset_server.py serving a few scenarios of tests/support/dataset_world.py and its
repository file, recorded with vcrpy, then made to read as api.github.com's answers: the loopback's
address replaced by ``https://api.github.com``, a fixed ``Date`` and rate-limit reset, GitHub's
media-type header, the request headers PyGithub chose (``Authorization`` filtered), and the quirk
comment on top. The earlier ``dataset_*`` cassettes were made the same way by hand.
"""

from __future__ import annotations

import copy
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vcr  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from bot.cli import main  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.factory import make_store  # noqa: E402
from tests.support.dataset_server import RESET_IN_S, LoopbackGitHub  # noqa: E402
from tests.support.dataset_world import (  # noqa: E402
    REPO,
    Builder,
    bot_login_label,
    duplicate_question,
    needs_info_label,
    needs_info_then_fixed_unanswered,
    one,
    question_naming_an_issue,
    renamed_gate_label,
    renamed_same_second,
    renamed_same_second_before,
    stale_bot_question,
    transferred,
    triager_bot_question,
)
from tests.support.duplicate_world import world as duplicate_world  # noqa: E402
from tests.support.settle_world import BOT, KINDS, decide_all  # noqa: E402
from tests.support.settle_world import world as settle_world  # noqa: E402

API = "https://api.github.com"
DATE = "Mon, 04 Mar 2024 09:00:00 GMT"
RESET = 1796291055
"""The rate-limit reset every dataset cassette names."""

SHAPES = """\
# Shapes: GitHub's REST docs ("List repository issues", "List timeline events for an issue",
# the issue-comment and issue-event objects; "Get an issue": 301 Moved Permanently for a
# transferred issue; "Best practices": follow redirects) and GraphQL docs
# (Issue.userContentEdits, nodes(ids:)), and the real objects in @octokit/fixtures 23.1.2
# (paginate-issues: an issue item) and @octokit/webhooks-examples 7.6.1 (a comment, a label,
# Codertocat/Hello-World); MIT. Hand-written to those shapes (no GitHub is reachable where
# this project is built): the scenarios of tests/support/dataset_world.py served by
# tests/support/dataset_server.py with its REPO_FILE, recorded, the host set to api.github.com.
# Authorization is filtered.
# Re-record: .venv/bin/python scripts/record_dataset_cassettes.py {name}
"""

CASSETTES: dict[str, tuple[str, list[tuple[Builder, int]]]] = {
    "dataset_renamed_gate_labels": (
        "the repository renamed the gate's needs-refinement label 'status: needs info' (the "
        "README's example), which reads like a needs-info label: #31 the bot, with an app's "
        "token, added it; #32 the Actions bot (the default bot-login) added an earlier name "
        "of it; #33 another app's needs-repro label, which still counts.",
        [(renamed_gate_label, 31), (bot_login_label, 32), (needs_info_then_fixed_unanswered, 33)],
    ),
    "dataset_stale_bot": (
        "#41 a stale bot asks 'Is this still a problem?' and the reporter says yes; #42 a bot "
        "the repository file lists in dataset.triager_bots asks for the version.",
        [(stale_bot_question, 41), (triager_bot_question, 42)],
    ),
    "dataset_duplicate_question": (
        "#51 a maintainer asks 'Is this the same as #101?', the reporter says yes, closed as "
        "a duplicate; #52 a question that names #101 in passing, answered.",
        [(duplicate_question, 51), (question_naming_an_issue, 52)],
    ),
    "dataset_transferred": (
        "#61 was transferred after the list was read: its timeline answers 301 Moved "
        "Permanently to /repositories/{id}/issues/{n}/timeline, which PyGithub follows (without "
        "the query), and the events there name the other repository; #62 stays.",
        [(transferred, 61), (needs_info_label, 62)],
    ),
    "dataset_same_second_rename": (
        "the reporter renamed the issue in the same second a maintainer labelled it: #71 "
        "after the label in GitHub's order (the row keeps the earlier title), #72 before it.",
        [(renamed_same_second, 71), (renamed_same_second_before, 72)],
    ),
}
"""Cassette → (its quirk, the scenarios and their issue numbers)."""


def _requests(base: str) -> Callable[[Any], Any]:
    def rewrite(request: Any) -> Any:
        request = copy.deepcopy(request)
        request.uri = request.uri.replace(base, API)
        kept = {k: v for k, v in request.headers.items() if k in ("Accept", "Content-Type")}
        request.headers = {**kept, "User-Agent": "PyGithub/Python"}
        return request

    return rewrite


def _responses(base: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def rewrite(response: dict[str, Any]) -> dict[str, Any]:
        response = copy.deepcopy(response)
        body = response["body"]["string"]
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        response["body"]["string"] = text.replace(base, API)
        sent = response["headers"]
        headers = {
            k: [v.replace(base, API) for v in values]
            for k, values in sent.items()
            if k not in ("Server", "Date", "Content-Length")
        }
        response["headers"] = {
            **headers,
            "Date": [DATE],
            "X-GitHub-Media-Type": ["github.v3; format=json"],
        }
        return response

    return rewrite


SETTLE_CASSETTES: dict[str, tuple[str, int]] = {
    "settle_issues": (
        "triage-bot settle over one issue of each kind of tests/support/settle_world.py (the "
        "repository file renames the needs-refinement label), a closed pull request among "
        "them: the updated-issues list, one GraphQL edit-history read, a timeline per decided "
        "issue.",
        len(KINDS),
    ),
}
"""Settle cassette → (its quirk, how many issues of settle_world.world)."""


DUPLICATE_CASSETTES: dict[str, str] = {
    "dataset_duplicates": (
        "triage-bot dataset --duplicates over tests/support/duplicate_world.py: the issues "
        "list of every state, one GraphQL query for the duplicate marks of the page's issues "
        "closed as duplicate or not planned (MarkedAsDuplicateEvent.canonical: REST's "
        "marked_as_duplicate event names none), and a timeline per such issue."
    ),
}
"""``dataset --duplicates`` cassette → its quirk."""

INDEX_CASSETTES: dict[str, str] = {
    "index_backfill": (
        "triage-bot index twice over tests/support/duplicate_world.py: the updated-issues list "
        "of every state, one page, nothing else (an issue listed in another repository, "
        "transferred, is not indexed); the second run asks from its cursor and writes nothing."
    ),
}
"""``index`` cassette → its quirk."""


def record(name: str) -> Path:
    """Record ``cassettes/{name}.yaml`` anew."""
    if name in DUPLICATE_CASSETTES:
        args = ["dataset", "--duplicates", "--repo", REPO, "--out"]
        return _record(name, DUPLICATE_CASSETTES[name], duplicate_world(), None, args)
    if name in INDEX_CASSETTES:
        args = ["index", "--repo", REPO]
        return _record(name, INDEX_CASSETTES[name], duplicate_world(), None, args, runs=2)
    if name in SETTLE_CASSETTES:
        quirk, count = SETTLE_CASSETTES[name]
        issues = settle_world(count)
        return _record(name, quirk, [d.scenario for d in issues], issues)
    quirk, chosen = CASSETTES[name]
    return _record(name, quirk, [one(builder, number) for builder, number in chosen], None)


def _record(
    name: str,
    quirk: str,
    scenarios: list[Any],
    decided: list[Any] | None,
    command: list[str] | None = None,
    *,
    runs: int = 1,
) -> Path:
    """Record ``command`` (default ``dataset``; ``settle`` over ``decided``), ``runs`` times
    on one store; a command ending in ``--out`` gets a folder."""
    target = ROOT / "cassettes" / f"{name}.yaml"
    target.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        pulls = 0 if decided is None and command is None else 4
        github = LoopbackGitHub(scenarios, pulls_every=pulls, clock=lambda: RESET - RESET_IN_S)
        db = str(Path(folder) / "triage.db")
        env = {"GITHUB_TOKEN": "recording-token", "GITHUB_API_URL": github.base_url}
        args = ["dataset", "--repo", REPO, "--out", str(Path(folder) / "set.jsonl")]
        if command is not None:
            args = [*command, str(Path(folder) / "set")] if command[-1] == "--out" else command
            env |= {"TRIAGE_DB": db}
        if decided is not None:
            store = make_store(Settings(db_path=db))
            decide_all(store, decided)
            store.close()
            env |= {"TRIAGE_DB": db, "TRIAGE_BOT_LOGIN": BOT}
            args = ["settle", "--repo", REPO]
        with github:
            recorder = vcr.VCR(
                record_mode="all",
                decode_compressed_response=True,
                before_record_request=_requests(github.base_url),
                before_record_response=_responses(github.base_url),
            )
            with recorder.use_cassette(str(target)):
                for _ in range(runs):
                    result = CliRunner().invoke(main, args, env=env)
                    if result.exit_code != 0:
                        raise SystemExit(f"{name}: the run failed:\n{result.output}")
    text = target.read_text("utf-8")
    target.write_text(f"# Quirk: {quirk}\n" + SHAPES.format(name=name) + text, "utf-8")
    return target


if __name__ == "__main__":
    for name in sys.argv[1:] or [
        *CASSETTES,
        *SETTLE_CASSETTES,
        *DUPLICATE_CASSETTES,
        *INDEX_CASSETTES,
    ]:
        print(record(name).relative_to(ROOT))
