"""A build's next chunk goes to the tag workers before the chunk ahead is done (issue 22, branch
first24): a worker free of its last files starts on the next chunk's while the other still
parses the chunk's last file. Main: the build waited for every answer of a chunk before it gave
the workers the next, so at the end of each of the kernel's 177 chunks one worker sat idle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokend.adapters import tag_proc, tag_workers
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tag_chunks
from tokend.service.workspace.index import WorkspaceIndex

FILES, CHUNK = 300, 50


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "gen").mkdir(parents=True)
    for i in range(FILES):
        text = f"def gen_{i:03}(x):\n    return load_{i:03}(x)\n"
        if i == CHUNK - 1:  # the first chunk's last file: a slow one (tenths of a second)
            text += "".join(f"def slow_{n}(x):\n    return [x, {n}]\n\n" for n in range(6000))
        (tree / "gen" / f"g{i:03}.py").write_text(text)
    return tree


def _answered(got: Any) -> list[int]:
    """The files a tag worker's frame answers: (answers, retiring), each answer (index, its
    tags' text, packed); a word worker's frame (a file's: index, "", counts, retiring) none."""
    answers = got[0] if isinstance(got, tuple) and len(got) == 2 else []
    return [int(json.loads(text)["d"][0][0][4:7]) for _, text, _ in answers if text]


def test_the_next_chunk_is_parsed_beside_the_last_file_of_the_one_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, int]] = []  # ("sent" | "answered", the file's number)
    real_send, real_recv = tag_proc.send, tag_workers.recv

    def sent(stream: Any, value: Any) -> None:
        if isinstance(value, list):  # a batch: (index, language, source, what, whole) each
            tags = [source for _, _, source, what, *_ in value if what != tag_workers.WORDS]
            events.extend(("sent", int(source[8:11])) for source in tags)  # "def gen_NNN"
        real_send(stream, value)

    def answered(stream: Any) -> Any:
        got = real_recv(stream)
        events.extend(("answered", n) for n in _answered(got))
        return got

    monkeypatch.setattr(tag_proc, "send", sent)  # (where a batch is sent)
    monkeypatch.setattr(tag_workers, "recv", answered)
    monkeypatch.setattr(tag_chunks, "CHUNK_FILES", CHUNK)
    tree = _tree(tmp_path)
    slow = "".join(f"def slow_{n}(x):\n    return [x, {n}]\n\n" for n in range(20_000))
    (tree / "gen" / f"g{CHUNK - 1:03}.py").write_text(  # about a second here: the tree's
        # tenths of a second were once parsed before the next chunk went out, under load
        f"def gen_{CHUNK - 1:03}(x):\n    return load_{CHUNK - 1:03}(x)\n" + slow
    )
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 2
    try:
        index.build()
        fitted = index.tags.repo_map(Focus(), 4096, len, "chars")
    finally:
        index.close()
    order = [n for kind, n in events if kind == "sent"]
    assert sorted(order) == list(range(FILES))  # each file once
    slow_done = events.index(("answered", CHUNK - 1))
    next_sent = min(events.index(("sent", n)) for n in range(CHUNK, 2 * CHUNK))
    assert next_sent < slow_done  # main: the second chunk went out after the slow file's tags
    assert index.tags.errors == {}
    assert "gen_" in fitted.text  # the map made from those tags


def test_a_worker_freed_by_one_chunk_is_taken_by_the_next_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next chunk's parse, waiting on the one worker it holds (here on a slow file), takes
    the worker the chunk before frees as soon as it is freed, not at its next answer or poll
    (here 30 s: a kernel build lost up to a poll, 0.2 s, at each of its 177 chunks)."""
    monkeypatch.setattr(tag_workers, "STOP_POLL_S", 30.0)
    events: list[tuple[str, int]] = []
    to: dict[int, int] = {}  # a file's number -> the worker's pipe it was sent on
    real_send, real_recv = tag_proc.send, tag_workers.recv

    def sent(stream: Any, value: Any) -> None:
        if isinstance(value, list):
            tags = [source for _, _, source, what, *_ in value if what != tag_workers.WORDS]
            events.extend(("sent", int(source[8:11])) for source in tags)
            to.update((int(source[8:11]), stream.fileno()) for source in tags)
        real_send(stream, value)

    def answered(stream: Any) -> Any:
        got = real_recv(stream)
        events.extend(("answered", n) for n in _answered(got))
        return got

    monkeypatch.setattr(tag_proc, "send", sent)  # (where a batch is sent)
    monkeypatch.setattr(tag_workers, "recv", answered)
    monkeypatch.setattr(tag_chunks, "CHUNK_FILES", CHUNK)
    tree = _tree(tmp_path)
    slower = "".join(f"def slower_{n}(x):\n    return [x, {n}]\n\n" for n in range(20000))
    (tree / "gen" / f"g{CHUNK:03}.py").write_text(
        f"def gen_{CHUNK:03}(x):\n    return x\n" + slower
    )
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 2
    try:
        index.build()
    finally:
        index.close()
    other = [n for n in range(CHUNK + 1, 2 * CHUNK) if to[n] != to[CHUNK]]  # (not the slow
    # file's worker, which holds its batch and one sent ahead: tag_proc.AHEAD)
    later = min(events.index(("sent", n)) for n in other)
    assert later < events.index(("answered", CHUNK))  # main: after the slow file's answer
