"""Definitions and references of source files, from tree-sitter's official grammar wheels."""

from tokend.adapters.tags.parser import TagParser, grammar_available

__all__ = ["TagParser", "grammar_available"]
