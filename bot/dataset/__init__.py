"""``triage-bot dataset``: closed issues labelled by what maintainers did, in the eval format."""

from bot.dataset.build import DatasetProgress, DatasetReport, run_dataset
from bot.dataset.files import DatasetFiles

__all__ = ["DatasetFiles", "DatasetProgress", "DatasetReport", "run_dataset"]
