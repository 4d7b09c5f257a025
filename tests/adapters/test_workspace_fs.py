"""workspace_fs on real folders: a symlink on a path's way is never written or deleted through,
a read expands only symlinks that stay inside, a written file has the asked mode from its first
byte on. The oracle is the folders on disk (os.lstat, the bytes of the outside folder)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tokend.adapters import workspace_fs
from tokend.core.workspace.files import PathConflict, PathOutside


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret\n")
    return ws, outside


def _outside_now(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in outside.iterdir()}


def test_a_write_through_a_symlinked_folder_is_refused(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    before = _outside_now(outside)
    os.rmdir(ws / "d")
    os.symlink(outside, ws / "d")
    with pytest.raises(PathConflict, match="symlink 'd'"):
        workspace_fs.write_atomic(ws, "d/new.txt", b"x", 0o644)
    with pytest.raises(PathConflict, match="symlink 'd'"):
        workspace_fs.delete(ws, "d/secret.txt")
    with pytest.raises(PathConflict):
        workspace_fs.write_atomic(ws, "d/deeper/new.txt", b"x", 0o644)
    assert _outside_now(outside) == before


def test_a_symlink_in_place_of_the_file_is_not_replaced(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    os.symlink(outside / "secret.txt", ws / "d" / "f.txt")
    with pytest.raises(PathConflict, match="symlink"):
        workspace_fs.write_atomic(ws, "d/f.txt", b"x", 0o644)
    with pytest.raises(PathConflict, match="symlink"):
        workspace_fs.delete(ws, "d/f.txt")
    assert os.path.islink(ws / "d" / "f.txt")
    assert (outside / "secret.txt").read_bytes() == b"secret\n"


def test_a_written_file_has_its_mode_and_no_temporary_is_left(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    old = os.umask(0o022)
    try:
        workspace_fs.write_atomic(ws, "a/b/.env", b"TOKEN=1\n", 0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(ws / "a" / "b" / ".env").st_mode) == 0o600
    assert (ws / "a" / "b" / ".env").read_bytes() == b"TOKEN=1\n"
    assert sorted(os.listdir(ws / "a" / "b")) == [".env"]


def test_the_temporary_copy_is_never_readable_by_others(dirs: tuple[Path, Path]) -> None:
    """The copy is watched while it is written: no moment has it with more than 0600."""
    ws, _ = dirs
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        tmp = ws / "d" / ".big.bin.tokend-restore"
        while not stop.is_set():
            try:
                seen.add(stat.S_IMODE(os.lstat(tmp).st_mode))
            except FileNotFoundError:
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(20):
            workspace_fs.write_atomic(ws, "d/big.bin", os.urandom(1 << 20), 0o600)
    finally:
        stop.set()
        watcher.join()
    assert seen <= {0o600}


def test_a_leftover_temporary_copy_is_replaced_not_followed(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    os.symlink(outside / "secret.txt", ws / "d" / ".f.txt.tokend-restore")
    workspace_fs.write_atomic(ws, "d/f.txt", b"mine\n", 0o644)
    assert (ws / "d" / "f.txt").read_bytes() == b"mine\n"
    assert (outside / "secret.txt").read_bytes() == b"secret\n"
    assert not os.path.lexists(ws / "d" / ".f.txt.tokend-restore")


def test_a_delete_prunes_the_folders_it_empties(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    (ws / "x" / "y").mkdir(parents=True)
    (ws / "x" / "y" / "f.txt").write_bytes(b"1")
    assert workspace_fs.delete(ws, "x/y/f.txt")
    assert not (ws / "x").exists() and ws.is_dir()
    assert not workspace_fs.delete(ws, "x/y/f.txt")  # gone already


def test_a_read_expands_a_symlink_only_inside(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_bytes(b"inside\n")
    os.symlink("../real", ws / "d" / "rel")
    os.symlink(ws / "real", ws / "abs")
    assert workspace_fs.read_bytes(ws, "d/rel/f.txt") == b"inside\n"
    assert workspace_fs.read_bytes(ws, "abs/f.txt") == b"inside\n"
    os.symlink(outside, ws / "out")
    os.symlink("../../outside", ws / "d" / "up")
    for path in ("out/secret.txt", "d/up/secret.txt"):
        with pytest.raises(PathOutside):
            workspace_fs.read_bytes(ws, path)
    with pytest.raises(PathConflict):
        workspace_fs.read_bytes(ws, "d/rel/f.txt", follow_inside=False)


def test_a_symlink_loop_is_refused(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    os.symlink("b", ws / "a")
    os.symlink("a", ws / "b")
    with pytest.raises(PathConflict, match="too many"):
        workspace_fs.read_bytes(ws, "a/f.txt")


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a"])
def test_paths_that_are_not_inside_are_refused(dirs: tuple[Path, Path], path: str) -> None:
    ws, _ = dirs
    with pytest.raises(PathConflict):
        workspace_fs.write_atomic(ws, path, b"x", 0o644)
