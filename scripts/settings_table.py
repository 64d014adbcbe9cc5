"""Print what is generated from the settings table (bot/settings_table.py), to paste:

    .venv/bin/python scripts/settings_table.py           # README.md, section Configuration
    .venv/bin/python scripts/settings_table.py --action  # action.yml, the run step's env:

tests/test_docs.py and tests/test_workflows.py fail until README.md and action.yml hold it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.setting_spec import action_env, readme_table  # noqa: E402
from bot.settings_table import SETTINGS  # noqa: E402


def run() -> None:
    if sys.argv[1:] == ["--action"]:
        for variable, value in action_env(SETTINGS).items():
            print(f"        {variable}: {value}")
    elif sys.argv[1:]:
        raise SystemExit(__doc__)
    else:
        print(readme_table(SETTINGS))


if __name__ == "__main__":
    run()
