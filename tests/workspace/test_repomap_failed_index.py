"""A workspace whose first index fails (here: what its files say cannot be counted) refuses
its repo map, saying why, instead of making one from the part of the tree it read: a text focus
or a file focus ranks by what files say, and a map made with some files' words missing would
rank them as if they said nothing. context/assemble leaves the map out with that reason. Main:
the failed build woke the waiters as if it had finished, and the map was made from what was
read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tokend.adapters import tag_parsing
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.errors import IndexFailed
from tokend.core.repomap.graph import Focus
from tokend.service.app import App
from tokend.service.app_workspaces import index_ports
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.assembly.workspace_window import with_workspace
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.session_files import change_files

TEXT = Focus(frozenset(), frozenset(), "the spindle rusts")
WHY = "OSError: the disk went away"


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for i in range(6):
        (tree / "pkg" / f"m{i}.py").write_text(
            f"# the spindle rusts {i}\ndef handler_{i}(value):\n"
            f"    return helper_{(i + 1) % 6}(value)\n\ndef helper_{i}(value):\n    return value\n"
        )
    return tree


def _fail_words(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(source: bytes, whole: bool = True) -> dict[int, int]:
        raise OSError("the disk went away")

    monkeypatch.setattr(tag_parsing, "count_words", failing, raising=False)


def test_repomap_failed_index_refuses_the_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    _fail_words(monkeypatch)
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    index.tags.pool_workers = 0
    try:
        with pytest.raises(OSError, match="the disk went away"):
            index.build()
        assert index.tags.ready.is_set() and index.tags.words_ready.is_set()  # nobody hangs
        for focus in (TEXT, Focus(frozenset(), frozenset({"helper_1"}), "")):
            with pytest.raises(IndexFailed) as refused:
                index.tags.repo_map(focus, 1024, len, "len")
            assert WHY in refused.value.message and "tokend stop" in refused.value.message
            assert refused.value.code == -32603
    finally:
        index.close()


async def test_repomap_failed_index_is_left_out_of_assemble_with_its_reason(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    _fail_words(monkeypatch)
    told: list[tuple[str, str]] = []
    index = app.workspaces.open(tree.as_uri(), lambda kind, message: told.append((kind, message)))
    sid = app.service.sessions.create_session("gpt-4o", workspace_uri=tree.as_uri()).id
    await change_files(app.workspaces, sid, ["pkg/m3.py"], read_only=False)
    assert index.tags.words_ready.wait(60)
    for _ in range(500):  # the progress's end is sent from the event loop
        if told and told[-1][0] == "end":
            break
        await asyncio.sleep(0.01)
    assert told[-1] == ("end", f"indexing failed ({WHY})")
    data = app.service.sessions.state(sid).data
    got, warned = with_workspace(app.workspaces, data, AssembleInput())
    assert got.repo_map is None
    assert f"repo map left out: indexing the workspace failed ({WHY})" in warned
    assert got.chat_files  # the rest of the workspace's part is still given
