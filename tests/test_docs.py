"""The README stays true to the code: the contract table, the exit codes, the env variables."""

from __future__ import annotations

from bot.audit.contract import SECTIONS
from bot.config import ENV_VARS
from bot.errors import BotError
from tests.support import ROOT

README = (ROOT / "README.md").read_text("utf-8")


def test_contract_table_is_printed_from_the_single_definition() -> None:
    for section in SECTIONS:
        assert f"| {section.number} | {section.title} | {section.rule} |" in README


def test_every_exit_code_is_documented() -> None:
    codes = {cls.exit_code for cls in _subclasses(BotError)} | {0}
    for code in codes:
        assert f"\n| {code} |" in README, code


def test_every_user_facing_env_variable_is_documented() -> None:
    for variables in ENV_VARS.values():
        plain = [v for v in variables if not v.startswith("INPUT_")]
        assert any(f"`{v}`" in README for v in plain), variables


def _subclasses(cls: type) -> set[type[BotError]]:
    found: set[type[BotError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_comment_command_is_in_the_readme() -> None:
    from bot.commands.handlers import COMMANDS
    from bot.commands.spec import usage_line

    for spec in COMMANDS.values():
        assert f"| `{usage_line(spec)}` | {spec.where} | {spec.help} |" in README


def test_every_cli_command_has_help() -> None:
    from click.testing import CliRunner

    from bot.cli import main

    for name in main.commands:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage:" in result.stdout
        assert f"triage-bot {name}" in README or name == "run", name


def test_the_configuration_table_is_printed_from_the_settings_table() -> None:
    """README.md holds what `scripts/settings_table.py` prints (paste it after a change)."""
    from bot.setting_spec import readme_table
    from bot.settings_table import SETTINGS

    assert readme_table(SETTINGS) in README


def _measured_models() -> list[str]:
    """The Ollama tags in the first column of the README's "Models measured" table, in order."""
    import re

    section = README.split("### Models measured", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    return [match.group(1) for row in rows if (match := re.search(r"\(`([^`]+)`\)", row))]


def test_the_default_model_is_the_best_measured_one() -> None:
    """Issue 16, "Defaults that work": a default that was never measured is not offered.
    action.yml and the settings table default to the first (best) row of the README's table,
    and the action to the audit format that row was measured with (JSON)."""
    import yaml

    from bot.settings_table import DEFAULT_OLLAMA_MODEL

    inputs = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))["inputs"]
    measured = _measured_models()
    assert {"qwen2.5-coder:1.5b", "gemma3:270m"} <= set(measured)  # evals/README.md's models
    assert inputs["validator-model"]["default"] == DEFAULT_OLLAMA_MODEL == measured[0]
    assert inputs["audit-model"]["default"] == ""  # the validator's model
    assert inputs["audit-format"]["default"] == "json"
