"""The decision store: what every store is (:mod:`~bot.history.protocol`), the SQLite file and
the PostgreSQL server behind it, their migrations, and what the bot remembers of GitHub
(:mod:`~bot.history.github_memory`). Storage only: the statistics read from it belong to the
pipelines (:mod:`bot.gate.stats`, :mod:`bot.audit.stats`)."""
