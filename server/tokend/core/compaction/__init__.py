"""Compaction: the prune tier, the summary tier and the checks on a summary."""
