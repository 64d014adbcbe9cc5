"""The settings table (bot/settings_table.py) and what is made from it: the order values are read
in (flags > action inputs > variables > defaults), the value rules, the CLI's flags.

The README table and action.yml are checked against it in test_docs.py and test_workflows.py.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.config import ENV_VARS, SETTINGS, Settings
from bot.errors import ConfigError
from bot.setting_spec import SettingSpec, readme_default
from bot.settings_table import SettingsTable


def test_every_field_of_the_table_is_a_row() -> None:
    """A field declared without setting() would be a setting nothing can set."""
    assert [f.name for f in fields(SettingsTable)] == [spec.name for spec in SETTINGS]
    code_only = {f.name for f in fields(Settings)} - {spec.name for spec in SETTINGS}
    assert code_only == {
        "model_retry",
        "github_retries",
        "github_backoff_s",
        "explicit",
        "repo_file",
        "repo_policy",
    }


def test_action_inputs_are_read_before_the_plain_variable() -> None:
    assert ENV_VARS["dry_run"] == ("INPUT_DRY-RUN", "INPUT_DRY_RUN", "TRIAGE_DRY_RUN")
    assert ENV_VARS["github_token"] == ("INPUT_TOKEN", "GITHUB_TOKEN")
    assert ENV_VARS["model_timeout_s"] == ("TRIAGE_MODEL_TIMEOUT",)


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        ({}, {}, 8),
        ({}, {"TRIAGE_MAX_SEGMENTS": "5"}, 5),
        ({}, {"TRIAGE_MAX_SEGMENTS": "5", "INPUT_MAX_SEGMENTS": "6"}, 6),
        ({}, {"INPUT_MAX_SEGMENTS": "6", "INPUT_MAX-SEGMENTS": "7"}, 7),
        ({"max_segments": 3}, {"INPUT_MAX-SEGMENTS": "7", "TRIAGE_MAX_SEGMENTS": "5"}, 3),
        ({"max_segments": None}, {"TRIAGE_MAX_SEGMENTS": "5"}, 5),
        ({}, {"INPUT_MAX_SEGMENTS": "  ", "TRIAGE_MAX_SEGMENTS": " 5\n"}, 5),
        ({}, {"INPUT_MAX_SEGMENTS": "", "TRIAGE_MAX_SEGMENTS": ""}, 8),
    ],
)
def test_flags_then_action_inputs_then_variables_then_the_default(
    flags: dict[str, object], env: dict[str, str], expected: int
) -> None:
    assert Settings.resolve(flags, env).max_segments == expected


def test_a_false_flag_beats_a_true_variable() -> None:
    assert Settings.resolve({"dry_run": False}, {"INPUT_DRY_RUN": "true"}).dry_run is False
    assert Settings.resolve({}, {"INPUT_DRY_RUN": "true"}).dry_run is True


def test_the_store_default_follows_xdg_data_home(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path)}
    assert Settings.resolve({}, env).db_path == str(tmp_path / "triage-bot" / "triage.db")
    assert Settings.resolve({}, {**env, "TRIAGE_DB": "x.db"}).db_path == "x.db"
    assert Settings.resolve({"db_path": "y.db"}, env).db_path == "y.db"
    # a PostgreSQL URL is kept as written (a path would fold its "//")
    url = "postgresql://triage@db.internal:5432/triage"
    assert Settings.resolve({}, {**env, "TRIAGE_DB": url}).db_path == url
    assert Settings.resolve({}, {**env, "INPUT_DB_PATH": url}).db_path == url
    assert Settings().db_path is None  # made directly (tests, benchmarks): no default path


@pytest.mark.parametrize(
    "spec", [s for s in SETTINGS if s.default not in (None, ())], ids=lambda s: s.name
)
def test_each_default_reads_back_from_its_readme_text(spec: SettingSpec) -> None:
    """The default as the README shows it, given as a variable, is the default: the row's value
    rule fits its type (a bool row without ``parse=true_or_false`` would read "false" as a
    non-empty string)."""
    text = readme_default(spec).strip("`")
    if spec.readme_default is not None:  # described, not a literal: the value's own text
        text = str(spec.default)
    assert spec.convert(text) == spec.default


def test_a_rejected_value_names_the_variable_and_the_flag() -> None:
    with pytest.raises(
        ConfigError, match=r"invalid value for TRIAGE_MAX_SEGMENTS / --max-segments"
    ):
        Settings.resolve({}, {"INPUT_MAX_SEGMENTS": "99"})
    with pytest.raises(
        ConfigError, match=r"invalid value for OLLAMA_HOST / --ollama-host: 'http://' \(must be"
    ):
        Settings.resolve({}, {"INPUT_OLLAMA_HOST": "http://u:pw@"})


def test_a_flag_that_is_no_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown setting nope"):
        Settings.resolve({"nope": 1}, {})


def test_each_command_has_the_flags_its_rows_name() -> None:
    names = {spec.name for spec in SETTINGS}
    for spec in SETTINGS:
        assert set(spec.commands) <= set(main.commands), spec.name
        assert bool(spec.flag) == bool(spec.commands), spec.name
    for command_name, command in main.commands.items():
        options = {p.name: p for p in command.params if isinstance(p, click.Option)}
        got = {name for name in options if name in names}
        want = {s.name for s in SETTINGS if command_name in s.commands}
        assert got == want, command_name
        for spec in SETTINGS:
            if spec.name in got:
                option = options[spec.name]
                assert option.opts == [spec.flag]
                assert spec.env in (option.help or "")
                if spec.type is bool:
                    assert option.secondary_opts == [f"--no-{spec.flag.removeprefix('--')}"]


def test_a_flag_not_given_leaves_the_variable_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI passes an absent flag as None (a ``--dry-run/--no-dry-run`` switch defaulting to
    False would override ``TRIAGE_DRY_RUN=true``)."""
    import bot.runner

    seen: list[Settings] = []

    def fake_run_event(settings: Settings) -> bot.runner.RunReport:
        seen.append(settings)
        return bot.runner.RunReport(text="", summary="")

    monkeypatch.setattr(bot.runner, "run_event", fake_run_event)
    env = {"TRIAGE_DRY_RUN": "true", "INPUT_MAX_SEGMENTS": "5", "TRIAGE_AUDIT_FORMAT": "json"}
    runner = CliRunner()
    assert runner.invoke(main, ["run", "--max-segments", "3"], env=env).exit_code == 0
    assert runner.invoke(main, ["run", "--no-dry-run"], env=env).exit_code == 0
    first, second = seen
    assert (first.dry_run, first.max_segments, first.audit_format) == (True, 3, "json")
    assert (second.dry_run, second.max_segments) == (False, 5)


ROOT = Path(__file__).resolve().parent.parent


def test_write_puts_a_stale_readme_table_and_action_env_right() -> None:
    """`scripts/settings_table.py --write` after adding a row: the README table and action.yml's
    run-step env come out as the table prints them, every other line as it was."""
    from bot.setting_spec import action_env, readme_table, with_action_env, with_readme_table

    readme = (ROOT / "README.md").read_text("utf-8")
    table = readme_table(SETTINGS)
    stale_row = table.splitlines()[-1]
    stale = readme.replace(stale_row + "\n", "").replace(table.splitlines()[2], "| `OLD` | x |")
    assert stale != readme
    assert with_readme_table(stale, SETTINGS) == readme
    assert with_readme_table(readme, SETTINGS) == readme

    action = (ROOT / "action.yml").read_text("utf-8")
    first, *_, last = action_env(SETTINGS)
    stale_action = action.replace(f"        {last}:", "        INPUT_GONE:", 1).replace(
        f"        {first}: ${{{{ inputs.token }}}}\n", ""
    )
    assert stale_action != action
    assert with_action_env(stale_action, SETTINGS) == action
    assert "TRIAGE_BIN: ${{ steps.venv.outputs.bin }}" in with_action_env(stale_action, SETTINGS)


def test_write_refuses_files_without_the_generated_parts() -> None:
    from bot.setting_spec import with_action_env, with_readme_table

    with pytest.raises(ValueError, match="configuration table"):
        with_readme_table("# a README\n", SETTINGS)
    with pytest.raises(ValueError, match="INPUT_"):
        with_action_env("runs:\n  steps: []\n", SETTINGS)


def test_secret_rows_have_no_flag_no_repr_and_no_echo() -> None:
    """A credential (the GitHub token, the model server's API key) is never a flag (a flag
    shows in the process list), never in ``repr(settings)``, and a rejected one is shown as
    ``***``; the CLI masks and redacts every secret row's value
    (tests/security/test_api_key_secrets.py)."""
    secret = [spec for spec in SETTINGS if spec.secret]
    assert {spec.name for spec in secret} == {"github_token", "openai_api_key"}
    shown = {item.name for item in fields(Settings) if item.repr}
    for spec in secret:
        assert spec.flag is None
        assert spec.name not in shown
        assert spec.echo("sk-value-123") == "***"
