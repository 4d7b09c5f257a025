"""The words' pass gives the memory the process freed back to the system as it goes, not only
once its pool ends (issue 22). On the kernel the pass starts beside the first map's request,
whose temporaries (tens of MiB in blocks under the daemon's mmap threshold) are freed below
blocks allocated meanwhile: glibc cannot shrink its heap past those, and keeps the freed pages
resident until a malloc_trim, which came when the pass's pool ended. So the daemon peaked at
the pass's end, its word table full, with 13-40 MiB of free heap resident beside it.

Here a real index (the real tag parsing and its trim, real files, words counted in the build's
thread) counts its words in chunks of one file (FILES landings; a trim every RELEASE_LANDINGS),
after the test's thread freed 20 MiB of its heap between blocks it keeps: the heap's resident
size, read from /proc/self/smaps at each landing, falls by most of those 20 MiB before the pass
ends. Bytes, not time."""

from __future__ import annotations

import ctypes.util
import sys
import threading
from pathlib import Path

import pytest

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import word_pass
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.tags import WorkspaceTags

FILES = 40
FREED = 20 << 20  # bytes freed between kept blocks, each under glibc's mmap threshold
BLOCK = 32 << 10

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or "libc" not in (ctypes.util.find_library("c") or ""),
    reason="glibc's heap (malloc_trim) and /proc/self/smaps",
)


def _heap_rss() -> int:
    """The resident bytes of this process's [heap] mapping (glibc's main arena)."""
    rss, in_heap = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:  # a mapping's first line
            in_heap = fields[-1] == "[heap]"
        elif in_heap and fields[0] == "Rss:":
            rss += int(fields[1]) << 10
    return rss


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for i in range(FILES):
        (tree / "pkg" / f"m{i:02d}.py").write_text(
            f"# module {i} frobnicates the spindle\ndef handler_{i}(value):\n    return value\n"
        )
    return tree


def test_the_words_pass_returns_the_freed_heap_before_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(word_pass, "CHUNK_FILES", 1)  # a landing a file: FILES landings
    heap_at_landings: list[int] = []
    landed = WorkspaceTags._graph_words

    def recorded(self: WorkspaceTags, *words: object) -> None:
        heap_at_landings.append(_heap_rss())
        landed(self, *words)

    monkeypatch.setattr(WorkspaceTags, "_graph_words", recorded)
    tree = _tree(tmp_path)
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.db"), index_ports())
    index.tags.pool_workers = 0  # counted in this thread: no pool, whose end trims
    # resident blocks in this thread's heap, every other one freed: holes glibc cannot give
    # back but by a trim (what is kept between them holds the heap's size)
    blocks = [b"x" * BLOCK for _ in range(2 * FREED // BLOCK)]
    kept = blocks[1::2]
    del blocks
    freed_resident = _heap_rss()
    build = threading.Thread(target=index.build)  # (as in the daemon; its heap is its own)
    try:
        build.start()
        build.join()
        assert index.tags.words_ready.is_set()
        assert len(heap_at_landings) == FILES
        # b30f9c3: the heap kept its 20 MiB resident at every landing (no trim in the pass)
        assert min(heap_at_landings[: FILES - 1]) < freed_resident - FREED * 3 // 4, (
            freed_resident,
            heap_at_landings,
        )
    finally:
        index.close()
        assert kept
