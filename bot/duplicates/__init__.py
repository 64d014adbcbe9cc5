"""Possible duplicates: an index of a repository's issues in the store, ranked in Python."""
