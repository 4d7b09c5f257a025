"""Workspace files: what a file is, editors' buffers, memory files."""
