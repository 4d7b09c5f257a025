"""Pure domain logic: token arithmetic, budgets, accounting, assembly and compaction planning.

Nothing in this package does I/O or imports pygls, lsprotocol, SQLAlchemy, watchdog or tiktoken;
`tests/unit/test_layout_layers.py` (import-linter) keeps it that way.
"""
