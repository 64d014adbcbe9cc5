"""The eval gate: measure the validator and the auditor on labelled sets (``triage-bot eval``)."""
