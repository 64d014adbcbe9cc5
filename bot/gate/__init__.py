"""The issue gate: everything it is, with one entry, :func:`run` (an ``issues`` event, or a
backlog of open issues).

Inside: the issue's text as the model sees it (:mod:`~bot.gate.issue_text`), the validator and
its reply (:mod:`~bot.gate.validator`, :mod:`~bot.gate.verdict`), what the bot checks itself
(:mod:`~bot.gate.evidence`, :mod:`~bot.gate.facts`), the decision under a policy
(:mod:`~bot.gate.policy`), the labels and the author comment (:mod:`~bot.gate.labels`,
:mod:`~bot.gate.author_comment`), the plan and its writes (:mod:`~bot.gate.plan`,
:mod:`~bot.gate.writes`), the backlog's selection (:mod:`~bot.gate.backlog`), the sequence
(:mod:`~bot.gate.pipeline`) and the gate's statistics (:mod:`~bot.gate.stats`).
"""

from bot.gate.backlog import Backlog
from bot.gate.pipeline import run

__all__ = ["Backlog", "run"]
