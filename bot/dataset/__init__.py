"""``triage-bot dataset``: a repository's own history as a labelled set in the eval format.

Only the maintainers of a repository know its bar, and their past actions on closed issues
say it: they asked the reporter for more, or acted on the report as written. The pipeline
reads that through the GitHub API (:class:`~bot.clients.github_port.IssueHistoryPort`),
labels each issue by the rules of :mod:`bot.dataset.rules`, keeps the text as the maintainers
first saw it (:mod:`bot.dataset.text`) and appends rows that ``triage-bot eval --issues`` and
``triage-bot calibrate --issues`` take as they are, resuming where an earlier run stopped
(:mod:`bot.dataset.files`). The one entry point is :func:`run_dataset`.
"""

from bot.dataset.build import DatasetProgress, DatasetReport, run_dataset
from bot.dataset.files import DatasetFiles

__all__ = ["DatasetFiles", "DatasetProgress", "DatasetReport", "run_dataset"]
