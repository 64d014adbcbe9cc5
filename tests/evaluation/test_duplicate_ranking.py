"""``triage-bot eval --only duplicates`` (bot.evaluation.duplicate_ranking) on a small invented
pool whose figures are worked out by hand, and its refusals through the CLI.

The pool (32 reports, titles only, each word in at most three reports so every shared word
retrieves): six pairs of identical reports; three pairs of reports sharing two of three words
(``delta echo foxtrot`` / ``delta echo kilo``: a pair; ``lima …``: a pair whose original comes
later; ``golf …``: not a pair, a false alarm); three ``sierra`` reports where the pair's
original ranks second; a report sharing nothing (its pair is missed); ten fillers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import main
from bot.duplicates.minilm import title_encoder
from bot.duplicates.pool import DuplicatePair, PoolReport
from bot.evaluation.duplicate_ranking import duplicates_report
from bot.settings_table import default_models_dir
from tests.support.title_model_files import broken_title_model, short_vocabulary

DAY = "2026-03-{:02d}T12:00:00Z"


def _pool_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(id_: str, title: str, day: int) -> None:
        rows.append({"id": id_, "title": title, "body": None, "created_at": DAY.format(day)})

    for i in range(6):
        add(f"a{i}", f"x{i}a x{i}b x{i}c", 1)
        add(f"b{i}", f"x{i}a x{i}b x{i}c", 2)
    add("r2", "delta echo foxtrot", 3)
    add("r5", "delta echo kilo", 4)
    add("r6", "lima mike november", 5)
    add("r7", "lima mike oscar", 6)
    add("r3", "golf hotel india", 7)
    add("r8", "golf hotel papa", 8)
    add("r13", "sierra tango whiskey", 9)
    add("r12", "sierra victor", 10)
    add("r11", "sierra tango uniform", 11)
    add("r9", "quebec romeo", 12)
    for i in range(10):
        add(f"f{i}", f"filler{i}a filler{i}b", 13 + i)
    return rows


def _pair_rows() -> list[dict[str, Any]]:
    return [
        *({"id": f"b{i}", "dup_of": f"a{i}"} for i in range(6)),
        {"id": "r5", "dup_of": "r2"},
        {"id": "r6", "dup_of": "r7"},  # the original is the later report
        {"id": "r11", "dup_of": "r12"},  # r13 shares more: the original ranks second
        {"id": "r9", "dup_of": "r3"},  # nothing in common: never found
    ]


POOL = [PoolReport.model_validate(r) for r in _pool_rows()]
PAIRS = [DuplicatePair.model_validate(r) for r in _pair_rows()]


def test_the_whole_pool_figures() -> None:
    report = duplicates_report(POOL, PAIRS, bound=0.85)
    assert (report["pool"], report["pairs"], report["earlier_only"]) == (32, 10, False)
    ranks = {o["id"]: o["rank"] for o in report["outcomes"]}
    assert ranks == {**{f"b{i}": 1 for i in range(6)}, "r5": 1, "r6": 1, "r11": 2, "r9": None}
    assert [o["dup_of"] for o in report["outcomes"]] == [p.dup_of for p in PAIRS]
    recall = report["recall"]
    assert [(recall[k]["k"], recall[k]["n"]) for k in ("1", "5", "10")] == [
        (8, 10), (9, 10), (9, 10)
    ]  # fmt: skip
    assert recall["1"]["share"] == pytest.approx(0.8)
    low, high = recall["5"]["interval"]
    assert low < 0.9 < high
    assert report["mrr"] == pytest.approx((8 + 1 / 2) / 10)


def test_the_statement_precision_coverage_and_threshold() -> None:
    statement = duplicates_report(POOL, PAIRS, bound=0.85)["statement"]
    # 12 identical reports state their twin (score 1, all right): 12/12 clears 85% at the lower
    # limit; the six two-of-three statements (score ~0.62, two wrong) pull 18 below it
    assert statement["threshold"] == pytest.approx(1.0)
    assert (statement["precision"]["k"], statement["precision"]["n"]) == (12, 12)
    assert statement["coverage"] == pytest.approx(12 / 32)
    at = {row["threshold"]: row for row in statement["at"]}
    assert (at[0.8]["made"], at[0.8]["precision"]["k"]) == (12, 12)
    # idf: a word of 1 report 3.80, of 2 reports 3.40, of 3 (sierra) 3.11; the title's
    # weight cancels. Two of three shared (delta, lima, golf): 2·3.40² / (2·3.40² + 3.80²)
    # = 0.615, right both ways for delta and lima, wrong both ways for golf
    assert (at[0.6]["made"], at[0.6]["precision"]["k"]) == (18, 16)
    assert at[0.6]["coverage"] == pytest.approx(18 / 32)
    # sierra tango uniform / whiskey: (3.11² + 3.40²) / (3.11² + 3.40² + 3.80²) = 0.595, wrong
    # both ways
    assert (at[0.5]["made"], at[0.5]["precision"]["k"]) == (20, 16)
    # sierra victor: 3.11² / (√(3.11² + 3.80²) · √(3.11² + 3.40² + 3.80²)) = 0.33 to r11 and
    # to r13; the tie goes to the lower number, r13 (earlier): wrong
    assert (at[0.3]["made"], at[0.3]["precision"]["k"]) == (21, 16)


def test_no_threshold_when_no_score_clears_the_bound() -> None:
    statement = duplicates_report(POOL, PAIRS, earlier_only=True, bound=0.85)["statement"]
    # only the later twin of each identical pair states it: 6/6 is below 85% at its lower limit
    assert statement["threshold"] is None
    assert statement["precision"] is None
    assert statement["coverage"] is None
    lower = duplicates_report(POOL, PAIRS, earlier_only=True, bound=0.75)["statement"]
    assert lower["threshold"] == pytest.approx(1.0)
    assert (lower["precision"]["k"], lower["precision"]["n"]) == (6, 6)
    assert lower["coverage"] == pytest.approx(6 / 32)


def test_earlier_only_ranks_against_earlier_reports() -> None:
    report = duplicates_report(POOL, PAIRS, earlier_only=True)
    assert report["earlier_only"] is True
    ranks = {o["id"]: o["rank"] for o in report["outcomes"]}
    assert ranks["r6"] is None  # its original r7 came later
    assert ranks["r11"] == 2
    assert ranks["r5"] == 1
    assert [report["recall"][k]["k"] for k in ("1", "5", "10")] == [7, 8, 8]
    assert report["mrr"] == pytest.approx((7 + 1 / 2) / 10)


# --- the command ----------------------------------------------------------------------------------
def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["eval", "--only", "duplicates", *args])


def _files(
    tmp_path: Path,
    pool: list[dict[str, Any]] | None = None,
    pairs: list[dict[str, Any]] | None = None,
) -> list[str]:
    return [
        "--pool",
        str(_write(tmp_path / "pool.jsonl", _pool_rows() if pool is None else pool)),
        "--pairs",
        str(_write(tmp_path / "pairs.jsonl", _pair_rows() if pairs is None else pairs)),
        "--out",
        str(tmp_path / "r.json"),
    ]


def test_the_command_writes_the_report(tmp_path: Path) -> None:
    result = _eval(tmp_path, *_files(tmp_path), "--min-precision", "0.85", "--words-only")
    assert result.exit_code == 0, result.output
    assert (
        "10 pairs, each ranked against the whole pool (32 reports), by words only" in result.output
    )
    assert "from score 1.000: 12/12 right" in result.output
    written = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert list(written) == ["duplicates"]
    section = written["duplicates"]
    assert set(section) == {
        "pool", "pairs", "earlier_only", "ranking", "recall", "mrr", "statement", "outcomes"
    }  # fmt: skip
    assert set(section["recall"]) == {"1", "5", "10"}
    assert set(section["recall"]["5"]) == {"k", "n", "share", "interval"}
    assert set(section["statement"]) == {"bound", "threshold", "precision", "coverage", "at"}
    assert section["outcomes"][0] == {"id": "b0", "dup_of": "a0", "rank": 1}
    assert section == json.loads(json.dumps(duplicates_report(POOL, PAIRS, bound=0.85)))


def test_by_default_the_command_ranks_with_the_title_model(tmp_path: Path) -> None:
    result = _eval(tmp_path, *_files(tmp_path))
    assert result.exit_code == 0, result.output
    assert "by words and title meaning" in result.output
    section = json.loads((tmp_path / "r.json").read_text("utf-8"))["duplicates"]
    encoder = title_encoder(default_models_dir())
    assert section == json.loads(json.dumps(duplicates_report(POOL, PAIRS, encoder=encoder)))
    assert section != json.loads(json.dumps(duplicates_report(POOL, PAIRS)))


def test_without_the_title_model_the_command_ranks_by_words_and_says_how_to_fetch_it(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        main,
        ["eval", "--only", "duplicates", *_files(tmp_path)],
        env={"TRIAGE_MODELS": str(tmp_path / "no-models")},
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("title model: ")
    assert "scripts/fetch_minilm.sh" in result.output
    assert "; ranked by words only" in result.output
    assert "by words only" in result.output.splitlines()[1]
    written = json.loads((tmp_path / "r.json").read_text("utf-8"))["duplicates"]
    assert written == json.loads(json.dumps(duplicates_report(POOL, PAIRS)))


def test_a_broken_title_model_is_named_with_what_is_wrong(tmp_path: Path) -> None:
    models = broken_title_model(tmp_path / "models", short_vocabulary)
    result = CliRunner().invoke(
        main,
        ["eval", "--only", "duplicates", *_files(tmp_path)],
        env={"TRIAGE_MODELS": str(models)},
    )
    assert result.exit_code == 0, result.output
    assert "the title model cannot be loaded from" in result.output
    assert "model.safetensors" in result.output
    assert "embeddings.word_embeddings.weight" in result.output
    assert "; ranked by words only" in result.output
    assert "Traceback" not in result.output
    assert json.loads((tmp_path / "r.json").read_text("utf-8"))["duplicates"]["ranking"] == (
        "words only"
    )


def test_the_command_with_earlier_only(tmp_path: Path) -> None:
    result = _eval(tmp_path, *_files(tmp_path), "--earlier-only")
    assert result.exit_code == 0, result.output
    assert "ranked against reports created before it" in result.output
    section = json.loads((tmp_path / "r.json").read_text("utf-8"))["duplicates"]
    assert section["earlier_only"] is True
    assert {"id": "r6", "dup_of": "r7", "rank": None} in section["outcomes"]


def _refused(result: Result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    for word in words:
        assert word in result.output


def test_missing_pool_or_pairs_is_refused(tmp_path: Path) -> None:
    pool = _write(tmp_path / "pool.jsonl", _pool_rows())
    _refused(_eval(tmp_path, "--pool", str(pool), "--out", str(tmp_path / "r.json")), "--pairs")
    assert not (tmp_path / "r.json").exists()


def test_a_pair_naming_a_report_not_in_the_pool_is_refused(tmp_path: Path) -> None:
    pairs = [*_pair_rows(), {"id": "b0", "dup_of": "nowhere"}]
    _refused(_eval(tmp_path, *_files(tmp_path, pairs=pairs)), "nowhere", "not a report of --pool")
    assert not (tmp_path / "r.json").exists()


def test_a_report_paired_with_itself_is_refused(tmp_path: Path) -> None:
    pairs = [*_pair_rows(), {"id": "r3", "dup_of": "r3"}]
    _refused(_eval(tmp_path, *_files(tmp_path, pairs=pairs)), "r3", "paired with itself")


def test_a_pool_id_twice_is_refused(tmp_path: Path) -> None:
    pool = [*_pool_rows(), {"id": "a0", "title": "again", "created_at": DAY.format(9)}]
    _refused(_eval(tmp_path, *_files(tmp_path, pool=pool)), "a report id appears twice")


@pytest.mark.parametrize(
    ("which", "line", "words"),
    [
        ("pool", "{not json", ("--pool", "pool.jsonl:33")),
        ("pool", '{"id": "z", "title": "no time"}', ("--pool", "pool.jsonl:33", "created_at")),
        ("pairs", '{"id": "b0"}', ("--pairs", "pairs.jsonl:11", "dup_of")),
        ("pairs", "[1, 2]", ("--pairs", "pairs.jsonl:11")),
    ],
)
def test_malformed_jsonl_is_refused_naming_the_line(
    tmp_path: Path, which: str, line: str, words: tuple[str, ...]
) -> None:
    args = _files(tmp_path)
    path = tmp_path / f"{which}.jsonl"
    path.write_text(path.read_text("utf-8") + line + "\n", encoding="utf-8")
    _refused(_eval(tmp_path, *args), *words)
    assert not (tmp_path / "r.json").exists()


_TOPICS = [
    ("Export drops the last row", "the csv export loses its final line"),
    ("Dark theme unreadable in settings", "grey text on a grey panel"),
    ("Crash when printing a long page", "printing forty pages closes the app"),
    ("Login loops back to the start", "after the password the form shows again"),
    ("Sync hangs on a big folder", "ten thousand files and the sync never ends"),
    ("Search ignores accented words", "café finds nothing, cafe finds it"),
]


def _copies(tmp_path: Path) -> list[str]:
    """Six reports and a later exact copy of each, paired: a statement earned at score 1."""
    pool = [
        {
            "id": f"{kind}{n}",
            "title": t,
            "body": b,
            "created_at": f"2024-0{1 + n // 3}-1{n}T0{day}:00:00Z",
        }
        for n, (t, b) in enumerate(_TOPICS)
        for kind, day in (("o", 1), ("c", 2))
    ]
    pairs = [{"id": f"c{n}", "dup_of": f"o{n}"} for n in range(len(_TOPICS))]
    return [*_files(tmp_path, pool=pool, pairs=pairs), "--earlier-only", "--min-precision", "0.7"]


def test_the_block_to_paste_is_printed_for_the_ranking_the_gate_uses(tmp_path: Path) -> None:
    staged = _eval(tmp_path, *_copies(tmp_path))
    assert staged.exit_code == 0, staged.output
    assert "paste into .github/triage-bot.yml" in staged.output
    assert "  statement: {threshold: " in staged.output
    words = _eval(tmp_path, *_copies(tmp_path), "--words-only")
    assert words.exit_code == 0, words.output
    assert "from score 1.000: 6/6 right" in words.output
    assert "paste into" not in words.output
    assert "the gate says nothing when ranking by words only: no block to paste" in words.output
