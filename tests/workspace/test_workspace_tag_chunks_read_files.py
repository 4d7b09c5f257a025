"""A build's chunks of tags count the files they read, not the paths they pass (issue 22, branch
first30): the kernel's 500-path chunks of Documentation/ and of device trees held a few sources
each, and the register headers' chunks were cut at 8 MB by files over 1 MiB that are never read,
so 37 of its 177 chunks of tags had fewer than 100 files, down to one; with two chunks at once
that is one file a worker, and a worker waited while the other parsed. Main bce5b30 cut them by
paths and by every file's size. The oracle: which paths each chunk holds, counted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.core.workspace.fileclass import FileEntry, content_class_of, language_of
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tag_chunks
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.tag_chunks import CHUNK_FILES, CHUNK_PATHS, chunks

MIB = 1 << 20


def _entry(path: str, size: int = 100, skipped: str | None = None) -> FileEntry:
    return FileEntry(path, size, 0, content_class_of(path), 0 if skipped else size // 4, skipped)


def _sources_by_chunk(
    entries: dict[str, FileEntry], overlays: dict[str, str] | None = None
) -> list[int]:
    """How many files each chunk reads for tags (a tag language, not skipped, or a buffer)."""
    overlays = overlays or {}
    return [
        sum(1 for p in chunk if language_of(p) and (p in overlays or not entries[p].skipped))
        for chunk in chunks(sorted(entries), entries, overlays)
    ]


def test_files_not_read_for_tags_do_not_fill_a_chunk() -> None:
    # 300 notes, 10 sources, 300 notes, 10 sources: 620 paths, 20 files to read
    paths = [f"a/n{i:03}.md" for i in range(300)] + [f"b/s{i}.py" for i in range(10)]
    paths += [f"c/n{i:03}.md" for i in range(300)] + [f"d/s{i}.py" for i in range(10)]
    entries = {p: _entry(p) for p in paths}
    # one chunk of the 20 (bce5b30: 500 paths, then 120: [10, 10])
    assert _sources_by_chunk(entries) == [20]


def test_files_too_big_to_read_do_not_fill_a_chunk_s_bytes() -> None:
    # sources of 100 KB between headers of 3 MiB that are skipped (over 1 MiB: never read)
    entries: dict[str, FileEntry] = {}
    for i in range(12):
        big, small = f"regs/r{i:02}a.h", f"regs/r{i:02}b.h"
        entries[big] = _entry(big, 3 * MIB, skipped="over the size limit")
        entries[small] = _entry(small, 100_000)
    # 1.2 MB to read: one chunk (bce5b30: cut at 8 MB of every file, [2, 2, 2, 2, 2, 2])
    assert _sources_by_chunk(entries) == [12]


def test_a_chunk_still_holds_at_most_its_files_bytes_and_paths() -> None:
    sources = {f"s/f{i:04}.c": _entry(f"s/f{i:04}.c") for i in range(CHUNK_FILES + 1)}
    assert _sources_by_chunk(sources) == [CHUNK_FILES, 1]
    big = {f"s/g{i}.c": _entry(f"s/g{i}.c", 3 * MIB) for i in range(4)}  # read: 8 MB at most
    assert _sources_by_chunk(big) == [2, 2]
    # paths not read are bounded too (bce5b30: 500 a chunk, as files)
    notes = {f"n/{i:05}.md": _entry(f"n/{i:05}.md") for i in range(CHUNK_PATHS * 2 + 1)}
    assert [len(c) for c in chunks(sorted(notes), notes, {})] == [CHUNK_PATHS] * 2 + [1]
    # an unsaved buffer is read for tags (a source) whatever the file on disk is
    assert _sources_by_chunk({"a.md": _entry("a.md"), "b.py": _entry("b.py", skipped="binary")},
                             {"b.py": "def b():\n    pass\n"}) == [1]  # fmt: skip


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for part in range(4):
        folder = root / f"p{part}"
        folder.mkdir(parents=True)
        for i in range(60):  # notes between the sources: not read for tags
            (folder / f"note{i:02}.md").write_text(f"note {i}\n")
        for i in range(30):
            n = part * 30 + i
            (folder / f"m{i:02}.py").write_text(
                f"def fn_{n}(x):\n    return fn_{(n * 7 + 1) % 120}(x)\n"
            )
    return root


def _map(tmp_path: Path, name: str) -> str:
    root = _tree(tmp_path) if not (tmp_path / "tree").exists() else tmp_path / "tree"
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(tmp_path / name), index_ports())
    index.build()
    return index.tags.repo_map(Focus(), 1024, lambda s: len(s.split()), "words").text


def test_the_map_is_the_one_a_single_chunk_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks cut anywhere hand the graph the same files in the same order: the map of a build
    in chunks of 7 files is the map of a build in one chunk."""
    monkeypatch.setattr(tag_chunks, "CHUNK_FILES", 7)
    chunked = _map(tmp_path, "a.sqlite3")
    monkeypatch.setattr(tag_chunks, "CHUNK_FILES", 10_000)
    whole = _map(tmp_path, "b.sqlite3")
    assert chunked == whole
    assert "fn_0" in whole
