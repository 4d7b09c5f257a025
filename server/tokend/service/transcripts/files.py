"""Where the agents keep their session transcripts: Claude Code's `projects` folder, Codex's
`sessions` (the followers watch them; `tokend follow --latest` picks the newest)."""

from __future__ import annotations

import os
from pathlib import Path

from tokend.service.transcripts.importer import Agent


def agent_folder(agent: Agent) -> Path:
    """Where the agent writes its transcripts: Claude Code's `projects` folder
    ($CLAUDE_CONFIG_DIR, default ~/.claude), Codex's `sessions` ($CODEX_HOME, default ~/.codex)."""
    if agent == "codex":
        return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "sessions"
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects"


def is_transcript(agent: Agent, folder: Path, path: Path) -> bool:
    """A session transcript of the agent: Claude Code's `projects/<project>/<session>.jsonl`
    (sub-agent files live deeper and are left out), Codex's `rollout-*.jsonl` at any depth."""
    if path.suffix != ".jsonl":
        return False
    try:
        relative = path.relative_to(folder)
    except ValueError:
        return False
    if agent == "codex":
        return path.name.startswith("rollout-")
    return len(relative.parts) == 2


def latest_transcript(agent: Agent, folder: Path | None = None) -> Path | None:
    """The agent's most recently written transcript in `folder` (default: the agent's), None
    when it has none."""
    folder = folder or agent_folder(agent)
    if not folder.is_dir():
        return None
    found = [p for p in folder.rglob("*.jsonl") if is_transcript(agent, folder, p)]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)
