"""Finding and reading a session's memory files, Claude Code's hierarchy, in load order:

1. managed policy: /etc/claude-code/CLAUDE.md (macOS: /Library/Application Support/ClaudeCode/);
2. the user's: ~/.claude/CLAUDE.md, then ~/.claude/rules/**/*.md (front-matter globs apply);
3. the project's, from the repository root (the nearest folder above holding .git; the
   workspace itself when there is none) down to the workspace folder, in each folder:
   CLAUDE.md, AGENTS.md, .claude/CLAUDE.md, then CLAUDE.local.md (the `.local` variant);
4. project rules: .claude/rules/**/*.md of the workspace, each applying once a file of the
   session matches its front matter's `paths:` globs (a rule without globs always applies);
5. the auto-memory index ~/.claude/projects/<workspace path, non-alphanumerics as "-">/memory/
   MEMORY.md, its first 200 lines (the rest dropped, and the chunk says so).

Files are read at each request (they are small), so a change on disk is seen at the next one;
a change inside the workspace also refreshes the sessions at once (the watcher).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokend.core.workspace.fileclass import decode_text
from tokend.core.workspace.memory import (
    AUTO,
    LOCAL,
    MANAGED,
    PROJECT,
    PROJECT_RULE,
    USER,
    USER_RULE,
    MemoryFile,
    front_matter,
    limit_lines,
    rule_applies,
)

MAX_MEMORY_FILE_BYTES = 256 * 1024
PROJECT_FILES = ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md")
LOCAL_FILES = ("CLAUDE.local.md",)


@dataclass(frozen=True, slots=True)
class MemoryRoots:
    """Where the machine-wide and the user's memory live (tests point them elsewhere)."""

    managed: Path
    home: Path

    @classmethod
    def default(cls) -> MemoryRoots:
        if sys.platform == "darwin":
            managed = Path("/Library/Application Support/ClaudeCode/CLAUDE.md")
        else:
            managed = Path("/etc/claude-code/CLAUDE.md")
        return cls(managed, Path.home())


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_MEMORY_FILE_BYTES:
            return None
        return decode_text(path.read_bytes()).text
    except OSError:
        return None


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return path.as_posix()


def repository_root(folder: Path) -> Path:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _rules(folder: Path, scope: str, session_paths: list[str], home: Path) -> list[MemoryFile]:
    found: list[MemoryFile] = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*.md")):
        text = _read(path)
        if text is None:
            continue
        globs, body = front_matter(text)
        if rule_applies(globs, session_paths):
            found.append(MemoryFile(_shown(path, home), scope, body))
    return found


def memory_files(
    workspace: Path, session_paths: Iterable[str], roots: MemoryRoots | None = None
) -> list[MemoryFile]:
    """The memory files that apply to a session of `workspace` holding `session_paths`."""
    roots = roots or MemoryRoots.default()
    home = roots.home
    paths = sorted(session_paths)
    files: list[MemoryFile] = []
    managed = _read(roots.managed)
    if managed is not None:
        files.append(MemoryFile(roots.managed.as_posix(), MANAGED, managed))
    user = _read(home / ".claude" / "CLAUDE.md")
    if user is not None:
        files.append(MemoryFile("~/.claude/CLAUDE.md", USER, user))
    files.extend(_rules(home / ".claude" / "rules", USER_RULE, paths, home))
    repo = repository_root(workspace)
    chain = [workspace, *workspace.parents]
    folders = list(reversed(chain[: chain.index(repo) + 1])) if repo in chain else [workspace]
    for folder in folders:
        for name, scope in [(n, PROJECT) for n in PROJECT_FILES] + [
            (n, LOCAL) for n in LOCAL_FILES
        ]:
            text = _read(folder / name)
            if text is not None:
                files.append(MemoryFile(_shown(folder / name, home), scope, text))
    files.extend(_rules(workspace / ".claude" / "rules", PROJECT_RULE, paths, home))
    project_key = re.sub(r"[^A-Za-z0-9]", "-", str(workspace))
    auto_path = home / ".claude" / "projects" / project_key / "memory" / "MEMORY.md"
    auto = _read(auto_path)
    if auto is not None:
        text, note = limit_lines(auto)
        files.append(MemoryFile(_shown(auto_path, home), AUTO, text, note))
    return files
