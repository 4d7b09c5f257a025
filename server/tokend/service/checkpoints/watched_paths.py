"""Checkpoints: the tracked files a watcher batch's path stands for (a file, or a folder whose
files were created, moved in or deleted), judged against the checkpoint store's baseline."""

from __future__ import annotations

import os
from pathlib import Path

from tokend.service.ports import CheckpointIndex
from tokend.service.workspace.index import WorkspaceIndex


def files_under(index: WorkspaceIndex, store: CheckpointIndex, rel: str) -> set[str]:
    """The tracked files a watcher path stands for: itself; for a folder that left, the
    files the baseline had under it; for a folder that exists (watchdog names a saved
    file's folder too), the files directly in it that are new or gone since the baseline
    (what was created or deleted in it), and every file of a subfolder the baseline has nothing
    under (created or moved in), not the files of the whole folder again."""
    full = index.root / rel
    is_dir = full.is_dir() and not full.is_symlink()
    if rel in ("", ".") or rel.split("/", 1)[0] == ".git" or index.rules.ignored(rel, is_dir):
        return set()
    if not is_dir:
        return {rel}
    under = store.baseline_under(index.uri, rel)
    if not under:
        return walk(index, full)
    prefix = rel + "/"
    known_files = {p for p in under if "/" not in p[len(prefix) :]}
    known_folders = {p[len(prefix) :].split("/", 1)[0] for p in under}
    found = set()
    for entry in os.scandir(full):
        child = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in known_folders and not index.rules.ignored(child, True):
                found.update(walk(index, Path(entry.path)))
        elif child in known_files:
            known_files.discard(child)  # there before and now: its own events tell
        elif not index.rules.ignored(child):
            found.add(child)  # created
    return found | known_files  # and deleted


def walk(index: WorkspaceIndex, folder: Path) -> set[str]:
    """Every file under `folder` that the ignore rules keep."""
    found: set[str] = set()
    for current, dirs, files in os.walk(folder):
        base = Path(current).relative_to(index.root).as_posix()
        dirs[:] = [d for d in dirs if not index.rules.ignored(f"{base}/{d}", True)]
        found.update(f"{base}/{f}" for f in files if not index.rules.ignored(f"{base}/{f}"))
    return found
