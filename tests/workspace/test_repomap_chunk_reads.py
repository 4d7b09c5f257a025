"""A chunk of the repo map's sources (service.workspace.tag_chunks.read_chunk) is read through
the folders its paths share, each opened once (adapters.workspace_reads; issue 22: the kernel's
55,555 sources were read at about twenty system calls a file, each path walked from the root),
and still never through a symlink that leaves the workspace. The oracles: the bytes the test
wrote, the outside folder's bytes, and the count of os.open calls (system calls, not time)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tokend.adapters import workspace_fs
from tokend.core.types import ContentClass
from tokend.core.workspace.fileclass import FileEntry
from tokend.core.workspace.files import PathConflict
from tokend.service.workspace.tag_chunks import Reading, read_chunk


class _EmptyCache:
    """A workspace cache that holds nothing yet (a cold start)."""

    def hashes(self, root: str, paths: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        return {}

    def tags(self, keys: Sequence[str]) -> dict[str, dict[str, object]]:
        return {}

    def words(self, keys: Sequence[str]) -> dict[str, object]:
        return {}


def _entries(root: Path, paths: Sequence[str]) -> dict[str, FileEntry]:
    out = {}
    for path in paths:
        st = (root / path).stat()
        out[path] = FileEntry(path, st.st_size, st.st_mtime_ns, ContentClass.CODE, 1)
    return out


def _reading(root: Path, errors: dict[str, str]) -> Reading:
    return Reading(root, _EmptyCache(), errors, 1 << 20, workspace_fs, 1)  # type: ignore[arg-type]


def _sources(chunk_work: Sequence[tuple[str, str, bytes]]) -> Mapping[str, bytes]:
    return {path: source for path, _language, source in chunk_work}


def _three_folders(root: Path, name: str) -> dict[str, bytes]:
    """55 C files in a/b/c (40), a/b/d (10) and e (5) under `root`: each path's bytes."""
    written: dict[str, bytes] = {}
    for folder, count in (("a/b/c", 40), ("a/b/d", 10), ("e", 5)):
        (root / folder).mkdir(parents=True)
        for i in range(count):
            path = f"{folder}/f{i:02d}.c"
            written[path] = f"int {name}{i}(void) {{ return {i}; }} /* {folder} */\n".encode()
            (root / path).write_bytes(written[path])
    return written


def _counted_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths os.open is called with from now on (until the monkeypatch is undone)."""
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: str, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    return opened


def test_a_chunk_opens_each_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _three_folders(tmp_path, "f")
    paths = sorted(written)
    entries = _entries(tmp_path, paths)
    opened = _counted_opens(monkeypatch)
    errors: dict[str, str] = {}
    chunk = read_chunk(_reading(tmp_path, errors), paths, entries, {})
    monkeypatch.undo()

    assert errors == {}
    assert _sources(chunk.work) == written
    # the root, a, b, c, d, e once each, and each file: 6 + 55 (8148dde: each path walked
    # from the root, 40 * 5 + 10 * 5 + 5 * 3 = 265)
    assert len(opened) == 6 + len(paths), opened
    assert sorted(p for p in opened if p.endswith(".c")) == sorted(p.split("/")[-1] for p in paths)


def test_a_chunk_reads_no_link_out_of_the_workspace(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.c").write_bytes(b"int secret;\n")
    (outside / "y.c").write_bytes(b"int outside_y;\n")
    (ws / "d" / "a.c").write_bytes(b"int a;\n")
    (ws / "d" / "z.c").write_bytes(b"int z;\n")
    os.symlink(outside / "secret.c", ws / "d" / "out.c")  # the file itself a link out
    os.symlink("a.c", ws / "d" / "same.c")  # a link that stays inside: read as read_bytes does
    os.symlink(outside, ws / "link")  # a folder that is a link out
    os.symlink("../d", ws / "d" / "up")  # a folder that is a link inside
    os.mkfifo(ws / "d" / "pipe.c")  # not a regular file: not waited on
    paths = ["d/a.c", "d/out.c", "d/pipe.c", "d/same.c", "d/up/z.c", "d/z.c", "link/y.c"]
    entries = {p: FileEntry(p, 10, 1, ContentClass.CODE, 1) for p in paths}
    errors: dict[str, str] = {}
    chunk = read_chunk(_reading(ws, errors), paths, entries, {})

    sources = _sources(chunk.work)
    assert sources == {
        "d/a.c": b"int a;\n",
        "d/same.c": b"int a;\n",
        "d/up/z.c": b"int z;\n",
        "d/z.c": b"int z;\n",
    }
    assert sorted(errors) == ["d/out.c", "d/pipe.c", "link/y.c"]
    assert all(reason.startswith("unreadable") for reason in errors.values()), errors
    assert chunk.tags["d/out.c"] is None and chunk.tags["link/y.c"] is None


def test_a_folder_swapped_for_a_link_out_while_held_is_not_followed(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "b.c").write_bytes(b"int secret;\n")
    (ws / "d" / "a.c").write_bytes(b"int a;\n")
    (ws / "d" / "b.c").write_bytes(b"int b;\n")
    with workspace_fs.reader(ws) as read:
        assert read("d/a.c") == b"int a;\n"
        os.rename(ws / "d", ws / "d.bak")  # `mv d d.bak; ln -s OUTSIDE d` between two reads
        os.symlink(outside, ws / "d")
        assert read("d/b.c") == b"int b;\n"  # the folder held (now d.bak), not the link's
    with workspace_fs.reader(ws) as read, pytest.raises(PathConflict):
        read("d/b.c")  # a new block walks again: the link leads out, refused
    assert (outside / "b.c").read_bytes() == b"int secret;\n"


def test_the_words_pass_reads_its_chunk_through_the_same_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The words' pass after the first map reads the same sources again, in path order: through
    the folders they share too (fd6806d: each path walked from the root, 265 opens)."""
    import hashlib
    import threading

    from tokend.service.workspace.word_pass import OwedWords

    written = _three_folders(tmp_path, "g")
    taken = {p: f"v1:c:{hashlib.sha256(b).hexdigest()}" for p, b in sorted(written.items())}
    owed = OwedWords(threading.RLock(), _reading(tmp_path, {}), lambda path: None, print)
    opened = _counted_opens(monkeypatch)
    work, keys = owed._read(taken)
    monkeypatch.undo()

    assert {path: source for path, _language, source in work} == written
    assert keys == list(taken.values())
    assert len(opened) == 6 + len(written), opened  # the root, a, b, c, d, e, and each file
