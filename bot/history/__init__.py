"""Decision history: the SQLite store (migrated on open) and read-only statistics."""
