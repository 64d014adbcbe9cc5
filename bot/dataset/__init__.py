"""``triage-bot dataset``: closed issues labelled by what maintainers did, in the eval format."""

from bot.dataset.build import DatasetProgress, DatasetReport, run_dataset
from bot.dataset.files import DatasetFiles
from bot.dataset.type_rows import TypeRow

__all__ = ["DatasetFiles", "DatasetProgress", "DatasetReport", "TypeRow", "run_dataset"]
