"""The prompt and policy versions the measured figures were recorded under.

Every stored decision, recorded reply and shipped policy names these versions: a change that
moves one makes every figure measured under it stale and re-judges every stored issue. A
refactor must keep them; a deliberate prompt or policy change updates the pin here and
re-measures (docs/evaluation.md).
"""

from __future__ import annotations

from dataclasses import replace

from bot.config import Settings
from bot.gate.validator import checklist_of, system_prompt
from bot.policy_file import load_policy
from bot.repo_file import parse_repo_file
from tests.support import ROOT

SHIPPED = {
    "model-verdict.json": "policy@d41c92b6",
    "qwen2.5-coder-1.5b.json": "policy@37406ac9",
}

VERSION_FILE = """\
elements:
  - name: version
    definition: the version of the tool you ran
    required_for: [bug]
"""


def test_the_default_prompt_version_is_pinned() -> None:
    assert system_prompt()[1] == "validator@7b2c93c7"


def test_a_repositorys_element_keeps_its_prompt_version() -> None:
    settings = replace(Settings(), repo_file=parse_repo_file(VERSION_FILE))
    assert system_prompt(checklist_of(settings))[1] == "validator@e8840d65"


def test_every_shipped_policy_version_is_pinned() -> None:
    found = {
        path.name: load_policy(path).version
        for path in sorted((ROOT / "bot" / "gate" / "policies").glob("*.json"))
    }
    assert found == SHIPPED
