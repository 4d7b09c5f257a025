"""Agent transcripts followed and imported into sessions."""
