"""session/compact and compaction.auto: the tiers and the summarizers."""
