"""Prompt files, loaded with importlib.resources and versioned by content hash."""

from __future__ import annotations

import hashlib
from importlib import resources

__all__ = ["RENAMED", "current_name", "load_prompt", "prompt_version"]


def load_prompt(name: str) -> str:
    """The text of ``bot/prompts/<name>.md``; ``FileNotFoundError`` when there is none."""
    return resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8").rstrip("\n")


def prompt_version(name: str, text: str) -> str:
    """``NAME@SHA8``: the name and the first 8 hex digits of the filled text's SHA-256."""
    return f"{name}@{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


RENAMED: dict[str, str] = {
    "validator@bc6f2888": "validator@7b2c93c7",
}
"""Prompt versions that named the same messages under an earlier versioning rule → their name
now. ``validator@bc6f2888`` also hashed the gate's decision rule, which has a version of its
own since (``policy@…``); replies recorded for it answer exactly ``validator@7b2c93c7``."""


def current_name(version: str) -> str:
    """``version`` under today's versioning rule (:data:`RENAMED`; most versions are)."""
    return RENAMED.get(version, version)
