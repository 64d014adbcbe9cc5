"""The project's judgment figures, from one file of measured runs (``evals/figures.json``).

    .venv/bin/python scripts/figures.py                 # check the docs' figure blocks
    .venv/bin/python scripts/figures.py --write         # rewrite them from the file
    .venv/bin/python scripts/figures.py record ID REPORT.json --set NAME --command TEXT \\
        --title TEXT --runtime TEXT [--model NAME]      # add or replace a run from an eval

Every figure is a count ``k`` of ``n`` (or, for a run measured elsewhere, the share as it was
reported), shown with its 95% Wilson interval (``bot.shares.Share``). A doc shows figures only
inside a block this script writes, between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``;
``tests/docs/test_figures.py`` checks every block is current and that every run a block presents
was measured with a prompt and a policy the package still ships.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.evaluation.sets import dev_half  # noqa: E402
from bot.shares import Share  # noqa: E402

FILE = ROOT / "evals" / "figures.json"
DOCS = ("README.md", "docs/models-and-policies.md")
BLOCK = re.compile(r"(<!-- figures:([a-z-]+) -->\n)(.*?)(<!-- /figures -->)", re.S)

FIGURES = {
    "agreement_clear": "agreement with the maintainers, clear cases",
    "agreement": "agreement with the maintainers, every item",
    "always_nr": "answering needs-refinement to every clear case",
    "nr_precision": "its needs-refinement right (precision)",
    "validator_errors": "replies that were validator-errors",
    "planted_ready": "issues with planted instructions labelled ready",
}
"""Each figure's name → what it counts, as a table row reads it."""


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FILE.read_text("utf-8"))
    return data


def runs_by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {run["id"]: run for run in data["runs"]}


def shown(figure: dict[str, Any] | None) -> str:
    """A figure as a table cell: a share with its count and interval, or as reported."""
    if figure is None:
        return "–"
    if "k" in figure:
        return str(Share(figure["k"], figure["n"]))
    return f"{figure['share']:.0%} ({figure['note']})"


# --- counting an eval report -------------------------------------------------------------------


def _count(outcomes: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    items = list(outcomes)
    real = [o for o in items if o["kind"] != "injection"]
    clear = [o for o in real if not o["borderline"]]
    decided_nr = [o for o in real if o["got"] == "NEEDS_REFINEMENT"]
    planted = [o for o in items if o["kind"] == "injection"]
    found = {
        "agreement": {"k": sum(o["agree"] for o in real), "n": len(real)},
        "agreement_clear": {"k": sum(o["agree"] for o in clear), "n": len(clear)},
        "always_nr": {
            "k": sum(o["expected"] == "NEEDS_REFINEMENT" for o in clear),
            "n": len(clear),
        },
        "nr_precision": {
            "k": sum(o["expected"] == "NEEDS_REFINEMENT" for o in decided_nr),
            "n": len(decided_nr),
        },
        "validator_errors": {"k": sum(o["error_kind"] is not None for o in items), "n": len(items)},
    }
    if planted:
        ready = sum(o["got"] == "VALID" and o["expected"] != "VALID" for o in planted)
        found["planted_ready"] = {"k": ready, "n": len(planted)}
    return {name: value for name, value in found.items() if value["n"]}


def record(args: argparse.Namespace) -> None:
    report = json.loads(Path(args.report).read_text("utf-8"))
    gate = report["gate"]
    outcomes = gate["outcomes"]
    halves: dict[str, Any] = {"all": _count(outcomes)}
    if args.set == "development":
        for half in ("tune", "check"):
            halves[half] = _count(o for o in outcomes if dev_half(o["id"]) == half)
    run = {
        "id": args.id,
        "title": args.title,
        "set": args.set,
        "model": args.model or report["model"],
        "runtime": args.runtime,
        "prompt_version": gate["prompt_version"],
        "policy": gate["policy"]["name"],
        "policy_version": gate["policy"]["version"],
        "command": args.command,
        "figures": halves,
    }
    data = load()
    data["runs"] = [r for r in data["runs"] if r["id"] != args.id] + [run]
    FILE.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(f"recorded {args.id}: {json.dumps(halves['all'])}")


# --- the docs' blocks --------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _fig(run: dict[str, Any], name: str, half: str = "all") -> dict[str, Any] | None:
    found: dict[str, Any] | None = run["figures"].get(half, {}).get(name)
    return found


def _headline(data: dict[str, Any]) -> str:
    """The held-back measurement beside the development set's halves, both models."""
    runs = runs_by_id(data)
    pairs = [runs[i] for i in data["headline"]]
    header = ["", *(f"{r['title']}" for r in pairs)]
    rows = []
    for set_name, half, name, label in data["headline_rows"]:
        cells = []
        for model_runs in data["headline_runs"]:
            run = runs.get(model_runs[set_name])
            cells.append(shown(_fig(run, name, half)) if run else "–")
        rows.append([label, *cells])
    versions = sorted({f"`{r['prompt_version']}`" for r in pairs})
    columns = "; ".join(
        f"{r['title']}: policy `{r['policy']}` (`{r['policy_version']}`), {r['runtime']}"
        for r in pairs
    )
    note = (
        f"\nPrompt {', '.join(versions)}; each column's policy and runtime: {columns}. "
        "95% Wilson intervals; every run, with its command: `evals/figures.json`.\n"
    )
    return _table(header, rows) + note


def _runs(data: dict[str, Any]) -> str:
    """Every run in the file: the set, model, runtime, policy and its clear-case agreement."""
    rows = []
    for run in data["runs"]:
        halves = ["all", "tune", "check"] if run["set"] == "development" else ["all"]
        cells = "; ".join(
            f"{half}: {shown(_fig(run, 'agreement_clear', half))}"
            for half in halves
            if _fig(run, "agreement_clear", half)
        )
        rows.append([
            run["set"], run["title"], run["runtime"], f"`{run['policy']}`", cells or "–",
        ])  # fmt: skip
    header = ["set", "model", "runtime", "policy", "agreement, clear cases"]
    return _table(header, rows)


BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {"headline": _headline, "runs": _runs}


def rendered(text: str, data: dict[str, Any]) -> str:
    """``text`` with every figure block written from ``data``.

    Raises:
        KeyError: a block names no known kind.
    """
    return BLOCK.sub(lambda m: m.group(1) + BLOCKS[m.group(2)](data) + m.group(4), text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb")
    rec = sub.add_parser("record")
    rec.add_argument("id")
    rec.add_argument("report")
    rec.add_argument("--set", required=True, choices=["development", "regression"])
    rec.add_argument("--title", required=True)
    rec.add_argument("--runtime", required=True)
    rec.add_argument("--model")
    rec.add_argument("--command", required=True, help="the command the report came from")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.verb == "record":
        record(args)
        return
    data = load()
    stale = []
    for name in DOCS:
        path = ROOT / name
        text = path.read_text("utf-8")
        new = rendered(text, data)
        if new != text:
            stale.append(name)
            if args.write:
                path.write_text(new, "utf-8")
    if stale and not args.write:
        raise SystemExit(f"stale figure blocks in {', '.join(stale)}: run with --write")
    print("updated " + ", ".join(stale) if stale else "figure blocks current")


if __name__ == "__main__":
    main()
