"""Found (issue 22's scale_tree, traced with gc.callbacks in the real daemon): a 100,000-file
workspace's index held a FileEntry per file, objects the cyclic garbage collector tracks. Every
pass of the middle or oldest generation walked them all while holding the interpreter, and the
event loop with it: a full pass took 107 ms on a loaded 2-core machine, and one pass of the
middle generation held another connection 416-505 ms. The index now keeps plain tuples, which
the collector stops tracking. Judged by what the collector has to walk (gc.get_objects), not by
a clock."""

from __future__ import annotations

import gc
from pathlib import Path

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

FILES = 5_000


def _tree(root: Path) -> None:
    for i in range(FILES):  # notes: nothing to tag, the entries alone are what the index holds
        folder = root / f"d{i // 250}"
        if i % 250 == 0:
            folder.mkdir(parents=True)
        (folder / f"n{i}.txt").write_text(f"note {i}\n")


def test_an_indexed_workspace_leaves_the_collector_nothing_per_file(tmp_path: Path) -> None:
    _tree(tmp_path / "ws")
    cache = WorkspaceCache(None)
    gc.collect()
    before = len(gc.get_objects())
    index = WorkspaceIndex((tmp_path / "ws").as_uri(), tmp_path / "ws", cache, index_ports())
    index.build()
    gc.collect()
    held = len(gc.get_objects()) - before
    entries = index.entries()
    assert len(entries) == FILES
    entry = entries["d3/n750.txt"]  # what a reader gets is the file's entry, as stat gave it
    assert (entry.path, entry.size_bytes, entry.skipped) == ("d3/n750.txt", len("note 750\n"), None)
    assert entry.mtime_ns == (tmp_path / "ws" / "d3" / "n750.txt").stat().st_mtime_ns
    # On the old index: more than FILES (one FileEntry each); now what an index is, whatever
    # its size (its locks, events, queues, the graph's few arrays)
    assert held < FILES // 10, f"{held:,} objects for the collector to walk after the index"
    index.close()
    index.forget()
