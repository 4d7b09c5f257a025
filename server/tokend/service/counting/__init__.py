"""Counting for one model: exact where a tokenizer exists, else calibrated."""
