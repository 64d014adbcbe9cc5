"""The dataset's labelling rules, the text as first seen and the files a run keeps, on the
scenarios of tests/support/dataset_world.py parsed by the adapter's own wire models (no HTTP: an
in-memory port), each rule also over variants of its input."""

from __future__ import annotations

import errno
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.clients.github_port import EditHistory, IssuePage, RateLimit, TimelineItem
from bot.clients.issue_history import parse_edit_histories, parse_issue_page, parse_timeline_item
from bot.dataset import run_dataset
from bot.dataset.files import DatasetFiles, legacy_row_id, row_id, state_path
from bot.dataset.questions import MAX_OTHER_WORDS
from bot.dataset.rules import (
    DEFAULT_ACCEPTED_LABELS,
    DEFAULT_NEEDS_INFO_LABELS,
    LabelRules,
    SkipReason,
    asks_for_information,
    asks_question,
    kind_of,
)
from bot.errors import ConfigError
from bot.evaluation.sets import EvalIssue, load_jsonl
from bot.gate.labels import file_gate_labels
from bot.repo_file import DatasetConfig, parse_repo_file
from tests.dataset.test_dataset_signals import DUPLICATE_CHECKS, REQUESTS_NAMING_AN_ISSUE
from tests.support.dataset_world import (
    BUILDERS,
    REPO,
    REPO_FILE,
    T0,
    Scenario,
    never_edited,
    noise,
    one,
    stamp,
    world,
)

FILE = parse_repo_file(REPO_FILE)
CONFIG = FILE.dataset
GATE = file_gate_labels(FILE)


class WorldPort:
    """:class:`IssueHistoryPort` over scenarios, through the adapter's parsers; one page."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self.scenarios = {s.number: s for s in scenarios}
        self.timelines_read: list[int] = []

    def closed_issues_page(
        self, repo: str, page: int, *, since: datetime | None = None, etag: str | None = None
    ) -> IssuePage:
        items = sorted((s.item for s in self.scenarios.values()), key=lambda i: -i["number"])
        return IssuePage(parse_issue_page(items if page == 1 else [], what="list"), None, False)

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        self.timelines_read.append(number)
        events = self.scenarios[number].timeline
        if events is None:
            return None
        return [item for raw in events if (item := parse_timeline_item(raw, repo)) is not None]

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        by_node = {s.item["node_id"]: s for s in self.scenarios.values()}
        nodes = [
            None if by_node[n].timeline is None else by_node[n].edits or never_edited(by_node[n])
            for n in node_ids
        ]
        return parse_edit_histories({"data": {"nodes": nodes}}, what="edits")

    def rate_limit(self) -> RateLimit | None:
        return None

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        return REPO_FILE


def outcome(scenario: Scenario, tmp_path: Path, config: DatasetConfig | None = CONFIG) -> Any:
    """The row the scenario gives, or its skip reason's name."""
    out = tmp_path / f"{scenario.number}-{len(list(tmp_path.iterdir()))}.jsonl"
    run_dataset(WorldPort([scenario]), REPO, out, config=config, gate=GATE)
    if out.exists():
        (row,) = load_jsonl(out, EvalIssue)
        return row
    state = json.loads(state_path(out).read_text("utf-8"))
    reason = state["repos"][REPO]["skipped"][row_id(REPO, scenario.number)]
    return SkipReason(reason).name


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_each_rule_gives_its_row_or_its_reason(builder: Any, tmp_path: Path) -> None:
    scenario = one(builder, BUILDERS.index(builder) + 1)
    got = outcome(scenario, tmp_path)
    if scenario.expected is None:
        assert got == scenario.skip, scenario.rule
        return
    assert isinstance(got, EvalIssue), (scenario.rule, got)
    assert (got.expected, got.borderline) == (scenario.expected, scenario.borderline)
    assert (got.title, got.body, got.kind) == (scenario.title, scenario.body, scenario.kind)
    assert got.rationale.startswith(f"{REPO}#{scenario.number}: ")
    if "rationale" in scenario.extra:
        assert got.rationale == f"{REPO}#{scenario.number}: {scenario.extra['rationale']}"


def test_the_repository_file_adds_label_names(tmp_path: Path) -> None:
    """Without the file's dataset: names, its own labels decide nothing."""
    configured = [b for b in BUILDERS if b.__name__.startswith("configured_")]
    for builder in configured:
        scenario = one(builder, BUILDERS.index(builder) + 1)
        assert isinstance(outcome(scenario, tmp_path), EvalIssue)
        assert outcome(scenario, tmp_path, config=None) == "NO_DECISION"


def _shifted(raw: Any, delta: timedelta) -> Any:
    """``raw`` with every GitHub time moved by ``delta``."""
    if isinstance(raw, dict):
        return {k: _shifted(v, delta) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_shifted(v, delta) for v in raw]
    if isinstance(raw, str) and len(raw) == 20 and raw.endswith("Z") and raw[10] == "T":
        return stamp(datetime.fromisoformat(raw) + delta)
    return raw


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    builder=st.sampled_from(BUILDERS),
    days=st.integers(min_value=-2000, max_value=2000),
    where=st.lists(st.integers(min_value=0, max_value=20), max_size=4),
)
def test_a_rule_holds_whatever_the_date_and_the_noise(
    builder: Any, days: int, where: list[int], tmp_path: Path
) -> None:
    """Moving the whole history in time, and events that decide nothing (subscribed,
    mentioned) anywhere in the timeline, change no outcome."""
    scenario = one(builder, BUILDERS.index(builder) + 1)
    expected = outcome(scenario, tmp_path)
    delta = timedelta(days=days)
    scenario.item = _shifted(scenario.item, delta)
    scenario.edits = _shifted(scenario.edits, delta)
    if scenario.timeline is not None:
        timeline = _shifted(scenario.timeline, delta)
        for spot in where:
            at = min(spot, len(timeline))
            moment = timeline[at - 1]["created_at"] if at else scenario.item["created_at"]
            timeline[at:at] = noise(datetime.fromisoformat(moment))
        scenario.timeline = timeline
    got = outcome(scenario, tmp_path)
    if isinstance(expected, EvalIssue):
        assert isinstance(got, EvalIssue)
        assert (got.expected, got.borderline, got.body, got.title) == (
            expected.expected,
            expected.borderline,
            expected.body,
            expected.title,
        )
    else:
        assert got == expected


def _spellings(name: str) -> st.SearchStrategy[str]:
    words = name.split("-")
    return st.builds(
        lambda sep, case, prefix: prefix + sep.join(case(w) for w in words),
        st.sampled_from(["-", "_", " ", "  "]),
        st.sampled_from([str.lower, str.upper, str.title]),
        st.sampled_from(["", "status: ", "Status:", "triage/", "S: "]),
    )


@given(data=st.data())
def test_label_names_compare_as_maintainers_write_them(data: st.DataObject) -> None:
    rules = LabelRules.from_config()
    name = data.draw(st.sampled_from(DEFAULT_NEEDS_INFO_LABELS))
    assert rules.asks_for_info(data.draw(_spellings(name)))
    accepted = data.draw(st.sampled_from(DEFAULT_ACCEPTED_LABELS))
    assert rules.accepts(data.draw(_spellings(accepted)))


@pytest.mark.parametrize(
    "label", ["not confirmed", "unconfirmed", "needs info later", "info", "bug", "confirmed:no"]
)
def test_other_labels_decide_nothing(label: str) -> None:
    rules = LabelRules.from_config()
    assert not rules.asks_for_info(label)
    assert not rules.accepts(label)


_PROSE = st.text(
    st.characters(codec="utf-8", exclude_characters="?`>#*_~[]<!\\&\n\r-+=|:0123456789"),
    max_size=40,
).map(str.strip)


@given(before=_PROSE, after=_PROSE)
def test_a_question_ends_a_sentence_of_prose(before: str, after: str) -> None:
    assert asks_question(f"{before} which version is it? {after}")
    assert asks_question(f"{before}\n\nDoes it happen on 4.2 too?")


@given(before=_PROSE, after=_PROSE)
def test_question_marks_in_code_quotes_and_urls_ask_nothing(before: str, after: str) -> None:
    for body in (
        f"{before} `a?` {after}",
        f"> is this a bug?\n\n{before}",
        f"{before}\n\n```\nwhy?\n```\n",
        f"{before} https://example.com/search?q=a {after}",
        f"    indented code?\n\n{before}",
    ):
        assert not asks_question(body), body


@given(before=_PROSE, after=_PROSE)
def test_question_marks_in_code_quotes_and_urls_ask_for_nothing(before: str, after: str) -> None:
    for body in (
        f"{before} `is this #1?` {after}",
        f"> is this the same as #1? which version?\n\n{before}",
        f"{before}\n\n```\nwhich version?\n```\n",
        f"{before} https://github.com/o/r/issues/1?q=a {after}",
    ):
        assert not asks_for_information(body), body


@pytest.mark.parametrize("words", DUPLICATE_CHECKS)
def test_a_duplicate_check_is_a_question_that_asks_for_nothing(words: str) -> None:
    assert asks_question(words) == words.endswith("?")
    assert not asks_for_information(words)


@pytest.mark.parametrize("words", REQUESTS_NAMING_AN_ISSUE)
def test_a_question_that_names_an_issue_in_passing_asks(words: str) -> None:
    assert asks_for_information(words)


_WORDS = st.lists(
    st.text(st.characters(categories=["L"]), min_size=1, max_size=9), min_size=1, max_size=30
)
_ISSUE = st.one_of(
    st.integers(1, 10**6).map(lambda n: f"#{n}"),
    st.integers(1, 10**6).map(lambda n: f"octo/other-repo#{n}"),
    st.integers(1, 10**6).map(lambda n: f"https://github.com/o/r/issues/{n}"),
    st.integers(1, 10**6).map(lambda n: f"[that one](https://github.com/o/r/pull/{n})"),
)


@given(words=_WORDS, issue=_ISSUE, space=st.sampled_from(["", " "]))
@example(words=["Same", "as"], issue="#101", space="")
def test_a_question_ending_on_an_issue_asks_only_when_it_says_more(
    words: list[str], issue: str, space: str
) -> None:
    """ "WORDS #N?" is a duplicate check up to MAX_OTHER_WORDS words, a request past them; a
    word after the reference makes it a request whatever its length."""
    said = " ".join(words)
    ends_on_it = f"{said} {issue}{space}?"
    assert asks_question(ends_on_it)
    assert asks_for_information(ends_on_it) == (len(words) > MAX_OTHER_WORDS)
    assert asks_for_information(f"{said} {issue} {words[0]}?")


@pytest.mark.parametrize(
    ("labels", "kind"),
    [
        (["bug"], "bug"),
        (["Type: Bug", "enhancement"], "bug"),
        (["kind/feature"], "feature"),
        (["enhancement"], "feature"),
        (["question"], "question"),
        (["documentation"], "docs"),
        (["help wanted"], "other"),
        ([], "other"),
    ],
)
def test_kind_comes_from_the_labels(labels: list[str], kind: str) -> None:
    assert kind_of(labels) == kind


# --- the files a run keeps ---------------------------------------------------------------


def _row(number: int) -> EvalIssue:
    return EvalIssue(
        id=row_id(REPO, number),
        kind="bug",
        title="t",
        body="b",
        expected="VALID",
        rationale=f"{REPO}#{number}: closed by commit",
    )


def test_a_row_torn_by_a_crash_is_dropped_and_read_again(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    whole = _row(1).model_dump_json() + "\n"
    out.write_text(whole + _row(2).model_dump_json()[:37], "utf-8")
    files = DatasetFiles(out, REPO)
    assert files.dropped_torn_line
    assert files.row_ids == {row_id(REPO, 1)}
    assert out.read_text("utf-8") == whole
    files.append(_row(2))
    files.append(_row(2))
    assert [r.id for r in load_jsonl(out, EvalIssue)] == [row_id(REPO, 1), row_id(REPO, 2)]


def test_a_last_row_without_its_line_end_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    out.write_text(_row(1).model_dump_json(), "utf-8")
    files = DatasetFiles(out, REPO)
    assert not files.dropped_torn_line
    files.append(_row(2))
    assert [r.id for r in load_jsonl(out, EvalIssue)] == [row_id(REPO, 1), row_id(REPO, 2)]


@pytest.mark.parametrize(
    "text", ["not json\n", '{"id": "x"}\n', _row(1).model_dump_json() + "\n[]\n{}\n"]
)
def test_a_file_that_is_not_rows_is_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    out = tmp_path / "set.jsonl"
    out.write_text(text, "utf-8")
    with pytest.raises(ConfigError, match=r"set\.jsonl:\d+: not a row"):
        DatasetFiles(out, REPO)
    assert out.read_text("utf-8") == text


_ONE = _row(1).model_dump_json().encode() + b"\n"
_INVALID_ROW = _row(2).model_dump_json().replace('"VALID"', '"valid"').encode()

FILE_VARIANTS: dict[str, tuple[bytes, bytes | None]] = {
    "notes without a line end": (b"my important notes, not a dataset", None),
    "notes with a line end": (b"my important notes, not a dataset\n", None),
    "a row, then notes without a line end": (_ONE + b"my notes", None),
    "a row, then a line that parses but is no row": (_ONE + _INVALID_ROW, None),
    "the same with its line end": (_ONE + _INVALID_ROW + b"\n", None),
    "a row, then a JSON array cut short": (_ONE + b'[{"id": "o-r-2"', None),
    "a row, then bytes that are not UTF-8": (_ONE + b"\xff\xfe{", None),
    "a torn row after a line that is no row": (_ONE + b"notes\n" + _INVALID_ROW[:30], None),
    "a torn row with no row before it": (_INVALID_ROW[:30], None),
    "an empty file": (b"", b""),
    "a row torn by a crash": (_ONE + _row(2).model_dump_json().encode()[:37], _ONE),
    "a row torn inside its text": (_ONE + '{"id": "o-r-2", "title": "é'.encode()[:-1], _ONE),
}
"""``--out`` as found → what it holds once opened: ``None`` when it is refused (and left as it
was), else its bytes (only a row torn by a crash is dropped)."""


@pytest.mark.parametrize("case", FILE_VARIANTS)
def test_only_a_row_torn_by_a_crash_is_ever_removed(tmp_path: Path, case: str) -> None:
    found, kept = FILE_VARIANTS[case]
    out = tmp_path / "set.jsonl"
    out.write_bytes(found)
    if kept is None:
        with pytest.raises(ConfigError, match=r"set\.jsonl:\d+: not a row"):
            DatasetFiles(out, REPO)
        assert out.read_bytes() == found
        assert not state_path(out).exists()
        return
    files = DatasetFiles(out, REPO)
    assert out.read_bytes() == kept
    assert files.dropped_torn_line == (kept != found)


@given(cut=st.integers(min_value=1, max_value=len(_row(2).model_dump_json()) - 1))
def test_a_row_torn_at_any_byte_is_dropped(tmp_path_factory: Any, cut: int) -> None:
    out = tmp_path_factory.mktemp("torn") / "set.jsonl"
    out.write_bytes(_ONE + _row(2).model_dump_json().encode()[:cut])
    files = DatasetFiles(out, REPO)
    assert files.dropped_torn_line
    assert out.read_bytes() == _ONE


_WORDS = st.lists(st.text("ab1", min_size=1, max_size=3), min_size=2, max_size=5)


@st.composite
def _names_alike(draw: st.DrawFn) -> tuple[str, str]:
    """Two ``OWNER/NAME`` of the same words, each with its own separators, case and slash:
    names an id built from the words alone would merge."""
    words = draw(_WORDS)

    def name() -> str:
        seps = [draw(st.sampled_from("-._")) for _ in words[1:]]
        seps[draw(st.integers(0, len(seps) - 1))] = "/"
        text = words[0] + "".join(sep + word for sep, word in zip(seps, words[1:], strict=True))
        return "".join(draw(st.sampled_from([c, c.upper()])) for c in text)

    return name(), name()


@given(names=_names_alike(), numbers=st.tuples(st.integers(1, 10**6), st.integers(1, 10**6)))
@example(names=("a-b/c", "a/b-c"), numbers=(1, 1))
@example(names=("a.b/c", "A_B/C"), numbers=(1, 1))
@example(names=("a/b-1", "a/b"), numbers=(2, 12))
def test_distinct_repositories_or_issues_never_share_a_row_id(
    names: tuple[str, str], numbers: tuple[int, int]
) -> None:
    (a, b), (m, n) = names, numbers
    first, second = row_id(a, m), row_id(b, n)
    assert (first == second) == ((a.lower(), m) == (b.lower(), n))
    EvalIssue(id=first, kind="bug", title="t", body="b", expected="VALID", rationale="r")


ALIKE = "codertocat/hello.world"
"""Another repository whose name has :data:`REPO`'s words."""


def test_a_repository_alike_in_a_shared_file_is_read_in_full(tmp_path: Path) -> None:
    scenarios = world(len(BUILDERS))
    out = tmp_path / "set.jsonl"
    first = WorldPort(scenarios)
    run_dataset(first, REPO, out, config=CONFIG, gate=GATE)
    rows = len(load_jsonl(out, EvalIssue))
    other = WorldPort(scenarios)
    run_dataset(other, ALIKE, out, config=CONFIG, gate=GATE)
    assert other.timelines_read == first.timelines_read != []
    alike = [r for r in load_jsonl(out, EvalIssue) if r.rationale.startswith(f"{ALIKE}#")]
    assert len(alike) >= rows - 1  # one issue's timeline reads differently in the other repo


def _to_legacy_ids(out: Path, repo: str) -> None:
    """Rewrite a run's files as earlier versions wrote them: every id in the old form."""
    rows = load_jsonl(out, EvalIssue)
    short = {row_id(repo, n): legacy_row_id(repo, n) for n in range(1, 1000)}
    lines = [r.model_copy(update={"id": short[r.id]}).model_dump_json() for r in rows]
    out.write_text("".join(f"{line}\n" for line in lines), "utf-8")
    state = json.loads(state_path(out).read_text("utf-8"))
    mine = state["repos"][repo]
    mine["skipped"] = {short[k]: v for k, v in mine["skipped"].items()}
    state_path(out).write_text(json.dumps(state), "utf-8")


def test_a_file_with_ids_of_the_old_form_resumes_and_stays_apart(tmp_path: Path) -> None:
    """Rows and skips an earlier version wrote count as done for their own repository (the
    rationale names it), not for another whose name has the same words."""
    scenarios = world(len(BUILDERS))
    out = tmp_path / "set.jsonl"
    first = WorldPort(scenarios)
    run_dataset(first, REPO, out, config=CONFIG, gate=GATE)
    _to_legacy_ids(out, REPO)
    before = out.read_bytes()
    again = WorldPort(scenarios)
    run_dataset(again, REPO, out, config=CONFIG, gate=GATE)
    assert again.timelines_read == []
    assert out.read_bytes() == before
    other = WorldPort(scenarios)
    run_dataset(other, ALIKE, out, config=CONFIG, gate=GATE)
    assert other.timelines_read == first.timelines_read


def _fails(message: str) -> Callable[..., None]:
    def fail(*args: object) -> None:
        raise OSError(errno.ENOSPC, message)

    return fail


@pytest.mark.parametrize(
    ("call", "named"), [("fsync", "--out {out}"), ("replace", "{out}.state.json")]
)
def test_a_write_that_fails_midway_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, named: str
) -> None:
    """A disk that fills up while rows or the state file are written: an error naming the
    file (no traceback)."""
    out = tmp_path / "set.jsonl"
    monkeypatch.setattr(f"bot.dataset.files.os.{call}", _fails("No space left on device"))
    with pytest.raises(ConfigError) as caught:
        run_dataset(WorldPort(world(len(BUILDERS))), REPO, out, config=CONFIG, gate=GATE)
    assert str(caught.value).startswith(named.format(out=out) + ": cannot be written")
    assert "No space left on device" in str(caught.value)


@pytest.mark.parametrize("text", ["{", '{"repos": 3}', '{"version": 1, "other": {}}'])
def test_a_state_file_that_is_not_ours_is_refused(tmp_path: Path, text: str) -> None:
    out = tmp_path / "set.jsonl"
    state_path(out).write_text(text, "utf-8")
    with pytest.raises(ConfigError, match="not the state a dataset run keeps"):
        DatasetFiles(out, REPO)
    assert state_path(out).read_text("utf-8") == text


def test_issues_done_are_not_read_again(tmp_path: Path) -> None:
    scenarios = world(len(BUILDERS))
    out = tmp_path / "set.jsonl"
    first = WorldPort(scenarios)
    report = run_dataset(first, REPO, out, config=CONFIG, gate=GATE)
    again = WorldPort(scenarios)
    second = run_dataset(again, REPO, out, config=CONFIG, gate=GATE)
    assert again.timelines_read == []
    assert second.progress.earlier == report.progress.read == len(scenarios)
    assert len(load_jsonl(out, EvalIssue)) == report.progress.rows


def test_since_keeps_the_issues_opened_from_that_day(tmp_path: Path) -> None:
    scenarios = world(10)
    cut = T0 + timedelta(hours=6)
    out = tmp_path / "set.jsonl"
    report = run_dataset(WorldPort(scenarios), REPO, out, config=CONFIG, gate=GATE, since=cut)
    numbers = {int(r.id.rsplit("-", 1)[1]) for r in load_jsonl(out, EvalIssue)}
    assert numbers == {6, 7, 8, 9, 10}
    assert report.progress.read == 5


def test_limit_stops_once_the_file_holds_that_many_rows(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    run_dataset(WorldPort(world(len(BUILDERS))), REPO, out, config=CONFIG, gate=GATE, limit=3)
    assert len(load_jsonl(out, EvalIssue)) == 3
    run_dataset(WorldPort(world(len(BUILDERS))), REPO, out, config=CONFIG, gate=GATE, limit=5)
    assert len(load_jsonl(out, EvalIssue)) == 5
