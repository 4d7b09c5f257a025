"""A file's tags keep no line text (issue 22): the map reads the lines it shows from the file
(core.repomap.render), so the text a tag worker decoded, cut, sent and the workspace cache
stored for every definition was never read; in the kernel's register headers it was half of
the tags' JSON. The map shows the same lines as before."""

from __future__ import annotations

import json
from pathlib import Path

from tokend.adapters.tag_workers import TagWorkers
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

HEADER = (
    "".join(f"#define GC_CNTL_{i}__ENABLE_MASK 0x{i:04x}beefL /* gate {i} */\n" for i in range(200))
    + "static int gc_enable(int mask) { return mask; }\n"
)


def test_the_workers_send_and_cache_no_line_text() -> None:
    with TagWorkers(1) as workers:
        [(text, light, packed)] = workers.parse_packed([("gc.h", "c", HEADER.encode())])
    tags = json.loads(text)
    assert len(tags["d"]) == 201 and len(packed.def_keys) == 201
    assert [d[:2] for d in tags["d"][:2]] == [
        ["GC_CNTL_0__ENABLE_MASK", 0],
        ["GC_CNTL_1__ENABLE_MASK", 1],
    ]
    kept = json.dumps(tags["d"])
    assert "beef" not in kept and "gate" not in kept  # main: each definition's line
    assert len(kept) < len(HEADER)  # main: the header's whole text and more


def test_the_map_shows_the_lines_from_the_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "gc.h").write_text(HEADER)
    (tree / "gc.c").write_text('#include "gc.h"\nint main(void) { return gc_enable(1); }\n')
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.build()
    shown = index.tags.repo_map(Focus(frozenset({"gc.c"}), frozenset(), ""), 4096, len, "chars")
    index.close()
    assert "static int gc_enable(int mask) { return mask; }" in shown.text
    assert "#define GC_CNTL_0__ENABLE_MASK 0x0000beefL /* gate 0 */" in shown.text
