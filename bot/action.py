"""GitHub Actions step outputs and step summary, appended as regular files only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.regular_file import append_output

__all__ = ["write_outputs", "write_summary"]


def write_outputs(path: Path | None, outputs: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to ``GITHUB_OUTPUT``; :exc:`ConfigError` if it cannot."""
    # A newline in a value would start a new output: whitespace runs become one space.
    if path is None:
        return
    lines = "".join(f"{name}={' '.join(str(value).split())}\n" for name, value in outputs.items())
    append_output(path, lines, what="GITHUB_OUTPUT")


def write_summary(path: Path | None, markdown: str) -> None:
    """Append markdown to ``GITHUB_STEP_SUMMARY``; :exc:`ConfigError` if it cannot."""
    if path is None:
        return
    append_output(path, markdown, what="GITHUB_STEP_SUMMARY")
