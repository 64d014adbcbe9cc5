"""The PR audit: select changed line ranges, audit each against the seven-section contract."""
