"""The status line: its segments, the row `tokend status` shows."""
