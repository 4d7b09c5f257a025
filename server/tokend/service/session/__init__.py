"""The loaded sessions, their owner (SessionState) and the use cases on them."""
