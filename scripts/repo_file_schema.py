"""Write the JSON schema of ``.github/triage-bot.yml`` (bot/repo_file.py) for editors:

    .venv/bin/python scripts/repo_file_schema.py   # writes schema/triage-bot.schema.json

tests/test_repo_file.py fails until the published file is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.repo_file import json_schema  # noqa: E402

if __name__ == "__main__":
    target = ROOT / "schema" / "triage-bot.schema.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(target.relative_to(ROOT))
