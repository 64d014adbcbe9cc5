from bot.audit.pipeline import run

__all__ = ["run"]
