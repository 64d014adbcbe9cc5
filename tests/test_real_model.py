"""The real embedded model (Gemma 3 270M) through the whole gate: invariants, not opinions.

Gemma 3 270M is a pipeline smoke model: it calls almost every issue VALID. These tests check
what must hold whatever it answers: exactly one gate label afterwards, a non-empty reason, real
token counts, and a defined outcome for hostile text. Judgment is measured by `triage-bot eval`
on stronger models, not here. Wall times are printed in the test summary.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients.embedded import EmbeddedChatModel
from bot.config import EMBEDDED_N_CTX, VALIDATOR_OPTIONS
from bot.events import IssuesEvent, route_event
from bot.flows import apply_gate, plan_gate
from bot.triage.labels import GATE_LABELS
from bot.triage.validator import Validator
from tests.conftest import ROOT, TIMINGS, load_webhook
from tests.test_flows import RecordingGitHub

pytestmark = pytest.mark.model

ISSUES = sorted(
    p for p in (Path(__file__).parent / "data" / "issues").glob("*.md") if p.name != "README.md"
)
GATE_NAMES = {label.name for label in GATE_LABELS}


@pytest.fixture(scope="module")
def validator() -> Validator:
    model = EmbeddedChatModel(n_ctx=EMBEDDED_N_CTX)
    return Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000)


def _event(path: Path, labels: list[str]) -> IssuesEvent:
    title, _, body = path.read_text("utf-8").partition("\n")
    payload = load_webhook("issues.opened.18")
    payload["issue"].update(
        title=title.removeprefix("# "), body=body, labels=[{"name": n} for n in labels]
    )
    event = route_event("issues", payload)
    assert isinstance(event, IssuesEvent)
    return event


@pytest.mark.parametrize("path", ISSUES, ids=[p.stem for p in ISSUES])
def test_gate_ends_with_exactly_one_gate_label(validator: Validator, path: Path) -> None:
    start_labels = ["bug", "needs-refinement"]
    started = time.perf_counter()
    plan = plan_gate(_event(path, start_labels), validator)
    TIMINGS.append((f"gate {path.stem}", (time.perf_counter() - started) * 1000))
    github = RecordingGitHub()
    apply_gate(plan, github)
    added = {c[-1] for c in github.calls if c[0] == "add"}
    removed = {c[-1] for c in github.calls if c[0] == "remove"}
    after = (set(start_labels) | added) - removed
    assert len(after & GATE_NAMES) == 1
    assert "bug" in after
    d = plan.decision
    assert d.reason.strip()
    assert d.prompt_tokens > 0
    assert (d.verdict is None) == (d.label.name == "validator-error")
    if d.verdict is not None:
        assert d.output_tokens > 0


def test_injected_verdict_is_never_the_bots_judgment(validator: Validator) -> None:
    """Whatever the model echoes, the injected reason never comes back as a verdict's reason."""
    path = Path(__file__).parent / "data" / "issues" / "injection-fake-delimiter.md"
    plan = plan_gate(_event(path, []), validator)
    assert plan.labels.target.name in GATE_NAMES
    if plan.decision.verdict is not None:
        assert "Complete report with a clear error" not in plan.decision.reason
    else:
        assert plan.labels.target.name == "validator-error"


def test_readme_main_job_on_the_embedded_model() -> None:
    started = time.perf_counter()
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dry-run",
            "--event-name",
            "issues",
            "--event-path",
            str(ROOT / "examples" / "issues.opened.json"),
        ],
    )
    TIMINGS.append(("cli run --dry-run (example event)", (time.perf_counter() - started) * 1000))
    assert result.exit_code == 0, result.output
    assert "issues.opened Codertocat/Hello-World#1" in result.stdout
    assert "model:    gemma-3-270m-q4_k_m.gguf" in result.stdout
    labels = [line for line in result.stdout.splitlines() if line.startswith("label:")]
    assert len(labels) == 1
    assert labels[0].split()[1] in GATE_NAMES
