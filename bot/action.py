"""GitHub Actions plumbing: step outputs and the step summary.

Formats from GitHub's "Workflow commands" documentation: outputs are ``name=value`` lines appended
to the file at ``GITHUB_OUTPUT``; the summary is markdown appended to ``GITHUB_STEP_SUMMARY``.
Values are single-line here; a newline in a value would start a new output, so it is replaced.
Both files are appended to as regular files only, never through a link
(:func:`bot.regular_file.append_output`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.regular_file import append_output

__all__ = ["write_outputs", "write_summary"]


def write_outputs(path: Path | None, outputs: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to ``GITHUB_OUTPUT`` (no-op when ``path`` is ``None``).

    Raises:
        ConfigError: the file cannot be written (a link, a FIFO, no permission).
    """
    if path is None:
        return
    lines = "".join(f"{name}={' '.join(str(value).split())}\n" for name, value in outputs.items())
    append_output(path, lines, what="GITHUB_OUTPUT")


def write_summary(path: Path | None, markdown: str) -> None:
    """Append markdown to ``GITHUB_STEP_SUMMARY`` (no-op when ``path`` is ``None``).

    Raises:
        ConfigError: the file cannot be written (a link, a FIFO, no permission).
    """
    if path is None:
        return
    append_output(path, markdown, what="GITHUB_STEP_SUMMARY")
