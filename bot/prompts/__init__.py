"""Prompt files, loaded with importlib.resources and versioned by content hash."""

from __future__ import annotations

import hashlib
from importlib import resources

__all__ = ["load_prompt", "prompt_version"]


def load_prompt(name: str) -> str:
    """The text of ``bot/prompts/<name>.md`` (UTF-8, trailing newline stripped).

    Raises:
        FileNotFoundError: no such prompt file (a packaging bug).
    """
    return resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8").rstrip("\n")


def prompt_version(name: str, text: str) -> str:
    """``NAME@SHA8``: the prompt's name and the first 8 hex digits of the SHA-256 of its
    filled text; stored with every decision so a changed prompt is a new version."""
    return f"{name}@{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"
