"""What is generated from the settings table (bot/settings_table.py):

    .venv/bin/python scripts/settings_table.py --write   # rewrite both in place (after a change)
    .venv/bin/python scripts/settings_table.py           # print README.md's Configuration table
    .venv/bin/python scripts/settings_table.py --action  # print action.yml's run-step env:

tests/docs/test_docs.py and tests/action/test_workflows.py fail until README.md and action.yml hold
it. A new action input also needs its entry under action.yml's ``inputs:`` (written by hand: the
action's own descriptions and defaults).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.setting_spec import (  # noqa: E402
    action_env,
    readme_table,
    with_action_env,
    with_readme_table,
)
from bot.settings_table import SETTINGS  # noqa: E402


def run() -> None:
    if sys.argv[1:] == ["--write"]:
        for name, rewrite in (("README.md", with_readme_table), ("action.yml", with_action_env)):
            path = ROOT / name
            old = path.read_text("utf-8")
            new = rewrite(old, SETTINGS)
            if new != old:
                path.write_text(new, "utf-8")
                print(f"updated {name}")
    elif sys.argv[1:] == ["--action"]:
        for variable, value in action_env(SETTINGS).items():
            print(f"        {variable}: {value}")
    elif sys.argv[1:]:
        raise SystemExit(__doc__)
    else:
        print(readme_table(SETTINGS))


if __name__ == "__main__":
    run()
