"""The PR audit: everything it is, with one entry, :func:`run` (one pull request at its head
SHA).

Inside: which changed lines are audited (:mod:`~bot.audit.selection`, :mod:`~bot.audit.ranges`,
:mod:`~bot.audit.context`), the seven-section contract and its checks
(:mod:`~bot.audit.contract`, :mod:`~bot.audit.checker`, :mod:`~bot.audit.evidence`,
:mod:`~bot.audit.structured`), the prompt and the auditor (:mod:`~bot.audit.prompt`,
:mod:`~bot.audit.auditor`), the comment and the review (:mod:`~bot.audit.report`,
:mod:`~bot.audit.review`), the plan and its writes (:mod:`~bot.audit.plan`), the sequence
(:mod:`~bot.audit.pipeline`) and the audit statistics (:mod:`~bot.audit.stats`).
"""

from bot.audit.pipeline import run

__all__ = ["run"]
