"""triage-bot: a GitHub bot that gates issues and audits pull requests with a local LLM.

See ARCHITECTURE.md for how the modules map to the pipelines, and docs/ for what they do.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
