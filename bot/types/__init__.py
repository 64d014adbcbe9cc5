"""Issue types: a classifier of bug, feature and question learned from a repository's history.

Applying a model (:mod:`bot.types.model_file`) needs numpy only; fitting one
(:mod:`bot.types.fit`) needs the ``types-fit`` extra (scikit-learn).
"""

from bot.types.rows import TypeRow

__all__ = ["TypeRow"]
