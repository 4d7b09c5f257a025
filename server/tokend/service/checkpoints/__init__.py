"""Checkpoints: recording file states, listing, diffing and restoring them."""
