"""Run a `triage-bot` command against a recorded cassette instead of the network (demos).

    .venv/bin/python scripts/replay.py e2e_audit_manual_dry_run \\
        audit --dry-run --repo Codertocat/Hello-World --pr 2 --ollama-host http://127.0.0.1:11434

The cassette (cassettes/NAME.yaml) is replayed with record_mode "none": a request it does not
hold fails loudly instead of reaching the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

import vcr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.cli import main  # noqa: E402


def run() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    name, args = sys.argv[1], sys.argv[2:]
    recorder = vcr.VCR(
        cassette_library_dir=str(ROOT / "cassettes"),
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path", "query"],
    )
    with recorder.use_cassette(f"{name}.yaml"):
        main.main(args=args, prog_name="triage-bot", standalone_mode=True)


if __name__ == "__main__":
    run()
