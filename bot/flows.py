"""The pipelines as straight-line functions: compute a plan, then apply it.

Rule source: design.md, "The three pipelines". A handler first computes a plan (which labels to
add and remove, and why) with its dependencies passed in; :func:`apply_gate` then performs the
plan's writes through the :class:`~bot.clients.github_client.GitHubPort`. ``--dry-run`` prints the
plan instead of applying it, and tests assert on plans.

Known limit, written down: a gate label a maintainer set by hand is replaced by the next automatic
run of an ``opened`` / ``edited`` / ``reopened`` event; honouring hand-set labels needs the
decision store (tracked in the PR-audit issue, which adds it).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.clients.github_client import GitHubPort
from bot.events import IssuesEvent
from bot.triage.labels import LabelPlan, plan_labels
from bot.triage.validator import GateDecision, Validator

__all__ = ["AppliedGate", "GatePlan", "apply_gate", "plan_gate"]


@dataclass(frozen=True)
class GatePlan:
    """The gate's plan for one ``issues`` event.

    Attributes:
        event: ``issues.<action>``.
        repo: ``owner/name``.
        number: issue number.
        public_repo: whether the repository is public (self-hosted runner warning).
        decision: the validator's decision.
        labels: the label writes that leave exactly one gate label.
    """

    event: str
    repo: str
    number: int
    public_repo: bool
    decision: GateDecision
    labels: LabelPlan


@dataclass(frozen=True)
class AppliedGate:
    """What :func:`apply_gate` did: ``requests`` is the number of GitHub write calls made."""

    plan: GatePlan
    requests: int


def plan_gate(event: IssuesEvent, validator: Validator) -> GatePlan:
    """Judge the event's issue and plan its labels. Never raises for model faults.

    Args:
        event: a routed ``issues`` event (see :func:`bot.events.route_event`).
        validator: the validator agent with its model.
    """
    decision = validator.judge(event.issue.title, event.issue.body)
    return GatePlan(
        event=f"issues.{event.action}",
        repo=event.repository.full_name,
        number=event.issue.number,
        public_repo=not event.repository.private,
        decision=decision,
        labels=plan_labels(event.issue.label_names, decision.label),
    )


def apply_gate(plan: GatePlan, github: GitHubPort) -> AppliedGate:
    """Apply the label plan: ensure + add the target label, then remove stale gate labels.

    Adding before removing means a crash between the two leaves two gate labels, never none;
    the next run's plan (from the payload) removes the extra one.

    Raises:
        GitHubError: a write failed after the client's retries.
    """
    requests = 0
    if plan.labels.add:
        github.ensure_label(plan.repo, plan.labels.target)
        github.add_labels(plan.repo, plan.number, plan.labels.add)
        requests += 2
    for name in plan.labels.remove:
        github.remove_label(plan.repo, plan.number, name)
        requests += 1
    return AppliedGate(plan=plan, requests=requests)
