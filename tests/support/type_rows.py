"""Made-up type rows: issues whose words lean to their type, with shared words and noise, so a
model learns them well but not perfectly."""

from __future__ import annotations

import json
import random
from pathlib import Path

from bot.repo_file import TYPE_NAMES, TypeName
from bot.types.rows import TypeRow

__all__ = ["made_up_rows", "write_rows"]

_WORDS: dict[TypeName, tuple[str, ...]] = {
    "bug": ("crash", "error", "traceback", "broken", "fails", "regression", "segfault", "wrong"),
    "feature": ("support", "add", "option", "proposal", "would", "allow", "new", "request"),
    "question": ("how", "why", "help", "possible", "understand", "docs", "explain", "anyone"),
}
_SHARED = ("the", "when", "build", "config", "with", "window", "file", "version", "using", "app")


def made_up_rows(
    per_type: int, *, seed: int = 7, repo: str | None = "acme/widgets"
) -> list[TypeRow]:
    """``per_type`` rows of each type, shuffled; the same seed gives the same rows."""
    rng = random.Random(seed)
    rows = []
    for kind in TYPE_NAMES:
        for n in range(per_type):
            own = list(_WORDS[kind])
            other = [w for t in TYPE_NAMES if t != kind for w in _WORDS[t]]
            words = rng.choices(own, k=5) + rng.choices(_SHARED, k=8) + rng.choices(other, k=2)
            rng.shuffle(words)
            title = " ".join(words[:4]).capitalize()
            body = " ".join(words[4:]) + f"\n\n```\nline {n}\n```"
            rows.append(TypeRow(id=f"{kind}-{n}", title=title, body=body, type=kind, repo=repo))
    rng.shuffle(rows)
    return rows


def write_rows(path: Path, rows: list[TypeRow]) -> Path:
    """``rows`` as a JSONL file at ``path``."""
    path.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in rows), "utf-8")
    return path
