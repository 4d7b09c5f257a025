"""Counting: estimates without a tokenizer, framing, what a tokenizer is shown."""
