"""The shared core every connection talks to: sessions, the gauge, assembly, compaction."""
