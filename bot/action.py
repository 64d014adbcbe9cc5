"""GitHub Actions plumbing: step outputs and the step summary.

Formats from GitHub's "Workflow commands" documentation: outputs are ``name=value`` lines appended
to the file at ``GITHUB_OUTPUT``; the summary is markdown appended to ``GITHUB_STEP_SUMMARY``.
Values are single-line here; a newline in a value would start a new output, so it is replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_outputs", "write_summary"]


def write_outputs(path: Path | None, outputs: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to ``GITHUB_OUTPUT`` (no-op when ``path`` is ``None``).

    Raises:
        OSError: the file cannot be written.
    """
    if path is None:
        return
    with path.open("a", encoding="utf-8") as fh:
        for name, value in outputs.items():
            clean = " ".join(str(value).split())
            fh.write(f"{name}={clean}\n")


def write_summary(path: Path | None, markdown: str) -> None:
    """Append markdown to ``GITHUB_STEP_SUMMARY`` (no-op when ``path`` is ``None``).

    Raises:
        OSError: the file cannot be written.
    """
    if path is None:
        return
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown)
