"""What a watcher batch touched, as it is now: the workspace paths it names and their entries
re-read (WorkspaceIndex.apply_changes applies them).

A file is stat'ed again. A folder that is gone (deleted, moved away) takes its files along. A
folder that exists is listed: watchdog names a file's folder beside the file on every save, and
a folder moved in comes as one path. Its files directly in it are taken as they are now (the
ones no longer there leave), and any subfolder the index knows nothing under (new: created or
moved in) is walked whole.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from tokend.core.workspace.fileclass import FileEntry
from tokend.service.workspace.entries import Under
from tokend.service.workspace.tree_ports import FileTree


def batch_paths(tree: FileTree, paths: Iterable[Path]) -> set[str]:
    """The workspace paths of a batch ("" for the root; none under .git), the folder rules
    forgotten where a batch touched a file holding them."""
    rels: set[str] = set()
    for path in paths:
        try:
            rel = path.relative_to(tree.root).as_posix()
        except ValueError:
            continue
        rel = "" if rel == "." else rel
        if tree.rules.holds_rules(rel):
            tree.rules.forget()
        if rel.split("/", 1)[0] != ".git":
            rels.add(rel)
    return rels


def entries_now(
    tree: FileTree, max_bytes: int, rels: Iterable[str], under: Under, stopping: threading.Event
) -> dict[str, FileEntry | None] | None:
    """Path -> its entry now (None: it left), for `rels` and what they hold; None once
    `stopping` is set."""
    now: dict[str, FileEntry | None] = {}
    for rel in sorted(rels):
        if stopping.is_set():
            return None
        full = tree.root / rel
        if full.is_dir() and not full.is_symlink():
            if not rel or not tree.rules.ignored(rel, is_dir=True):
                now.update(_folder_now(tree, max_bytes, rel, under))
            continue
        entry = None if tree.rules.ignored(rel) else tree.file_entry(rel, max_bytes)
        if entry is not None:
            now[rel] = entry
            continue
        now.update(dict.fromkeys(under.paths(rel + "/")))  # a folder that left, or
        now[rel] = None  # a file
    return now


def _folder_now(
    tree: FileTree, max_bytes: int, folder: str, under: Under
) -> dict[str, FileEntry | None]:
    """The entries of an existing folder as it is now (see the module docstring)."""
    prefix = f"{folder}/" if folder else ""
    if folder and not under.any(prefix):  # new to the index: everything under it
        found = tree.walk(max_bytes=max_bytes, start=folder)
        return {e.path: e for e in found}
    files, subfolders = tree.list_folder(folder, max_bytes=max_bytes)
    now: dict[str, FileEntry | None] = {e.path: e for e in files}
    for rel in under.paths(prefix):
        if "/" not in rel[len(prefix) :] and rel not in now:
            now[rel] = None  # was directly in the folder, is not now
    for sub in subfolders:
        if not under.any(sub + "/"):
            found = tree.walk(max_bytes=max_bytes, start=sub)
            now.update((e.path, e) for e in found)
    return now
