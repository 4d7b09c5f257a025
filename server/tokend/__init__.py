"""tokend: a language-server-style daemon that owns an AI coding agent's context window."""

__version__ = "0.1.0"
