"""Settling: what happened after the bot's decisions and review comments, read from the
repository's history into the live record (:mod:`bot.history.record`)."""
