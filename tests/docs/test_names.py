"""Names mean one thing: no module name is used for two concepts, ``ctx`` is always the job's
context, and the gate's data types are imported from ``bot/gate/types.py`` alone."""

from __future__ import annotations

import ast
from collections import defaultdict

from tests.support import ROOT

BOT = ROOT / "bot"

PARALLEL = frozenset({"pipeline.py", "plan.py", "stats.py", "evidence.py", "earned.py"})
"""The names each pipeline gives its own part of the same kind (``bot/gate/plan.py`` and
``bot/audit/plan.py`` are both a pipeline's plan)."""

GATE_TYPES = frozenset({"GateDecision", "Ruling", "AUTHOR_MARKER"})


def _trees() -> dict[str, ast.Module]:
    return {
        p.relative_to(ROOT).as_posix(): ast.parse(p.read_text("utf-8"))
        for p in sorted(BOT.rglob("*.py"))
    }


def test_no_module_name_is_used_twice_but_a_pipelines_parallel_parts() -> None:
    folders: dict[str, list[str]] = defaultdict(list)
    for path in sorted(BOT.rglob("*.py")):
        if path.name != "__init__.py":
            folders[path.name].append(path.parent.relative_to(ROOT).as_posix())
    shared = {name: where for name, where in folders.items() if len(where) > 1}
    assert {n for n in shared if n not in PARALLEL} == set()
    assert all(sorted(shared[n]) == ["bot/audit", "bot/gate"] for n in shared)


def test_ctx_is_always_the_job_context() -> None:
    wrong = [
        f"{file}:{node.lineno} ctx: {ast.unparse(node.annotation) if node.annotation else '?'}"
        for file, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.arg)
        and node.arg == "ctx"
        and (node.annotation is None or ast.unparse(node.annotation) != "JobContext")
    ]
    assert wrong == []


def test_the_gate_data_types_come_from_their_module() -> None:
    elsewhere = [
        f"{file}:{node.lineno} imports {alias.name} from {node.module}"
        for file, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "bot.gate.types"
        for alias in node.names
        if alias.name in GATE_TYPES
    ]
    assert elsewhere == []


def test_the_gate_types_import_no_behaviour_at_run_time() -> None:
    """Only the leaves ``labels`` and ``verdict`` at run time; the rest for annotations."""
    tree = ast.parse((BOT / "gate" / "types.py").read_text("utf-8"))
    at_run_time = {
        node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bot.gate.")
    }
    assert at_run_time == {"bot.gate.labels", "bot.gate.verdict"}
