"""Checkpoints: which file changes belong to which turn, what a rewind writes."""
