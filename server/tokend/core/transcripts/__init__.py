"""Agent transcripts (Claude Code, Codex) as events, followed and replayed."""
