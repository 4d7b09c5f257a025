"""tokend's own folders inside a workspace: which they are, and that the walk, the watcher (no
inotify watch even placed), the polling fallback and the index leave them out.

Oracles: the paths the test itself laid out, and for the watches the kernel's own list
(/proc/self/fdinfo of every inotify descriptor: the inode of each watched folder).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from tokend.adapters.own_folders import own_paths_inside
from tokend.adapters.watcher import FolderWatcher
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.workspace.own_paths import OwnPaths
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with tokend's XDG folders in it, the data folder through a symlink."""
    home = tmp_path / "home"
    for folder in ("src/pkg", ".local/share", ".local/state", ".cache", ".run", "db"):
        (home / folder).mkdir(parents=True)
    (home / "src/pkg/app.py").write_text("A = 1\n")
    (home / "notes.md").write_text("notes\n")
    (home / "linked-data").symlink_to(home / ".local/share")
    for own in (".local/share/tokend/checkpoints/blobs/ab", ".local/state/tokend", ".cache/tokend"):
        (home / own).mkdir(parents=True)
    (home / ".local/share/tokend/checkpoints/blobs/ab/abcd").write_bytes(b"blob")
    (home / ".local/state/tokend/daemon.log").write_text("log\n")
    (home / ".run/tokend").mkdir(mode=0o700)
    (home / "db/sessions.sqlite3").write_bytes(b"SQLite format 3\0")
    (home / "db/sessions.sqlite3-wal").write_bytes(b"wal")
    (home / "db/other.txt").write_text("mine\n")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "linked-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local/state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(home / ".run"))
    return home


TOKENDS = (
    ".local/share/tokend/",
    ".local/state/tokend/",
    ".cache/tokend/",
    ".run/tokend/",
    "db/sessions",
)


def tokends(root: Path, paths: list[Path]) -> list[Path]:
    """The paths among `paths` that are tokend's (by the layout this test made)."""
    return [p for p in paths if (p.relative_to(root).as_posix() + "/").startswith(TOKENDS)]


def own_of(home: Path) -> OwnPaths:
    return own_paths_inside(home.resolve(), home / "db/sessions.sqlite3")


def test_the_own_folders_are_found_through_symlinks_env_and_the_database_url(home: Path):
    assert set(own_of(home).rels) == {
        ".local/share/tokend",  # XDG_DATA_HOME, given through a symlink
        ".local/state/tokend",
        ".cache/tokend",
        ".run/tokend",
        "db/sessions.sqlite3",
        "db/sessions.sqlite3-wal",
        "db/sessions.sqlite3-shm",
        "db/sessions.sqlite3-journal",
    }
    # a workspace inside the data folder is tokend's own throughout
    inside = own_paths_inside((home / ".local/share/tokend/checkpoints").resolve())
    assert inside.rels == ("",) and inside.owns("blobs/ab/abcd")
    # a workspace elsewhere has none
    assert not own_paths_inside((home / "src").resolve())


def test_the_index_walks_past_the_own_folders(home: Path):
    root = home.resolve()
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports(), own_of(home))
    index.build()
    assert set(index.entries()) == {"src/pkg/app.py", "notes.md", "db/other.txt"}
    (home / ".local/share/tokend/checkpoints/blobs/ab/ef01").write_bytes(b"new blob")
    (home / ".local/share/tokend/newdir").mkdir()
    (home / ".local/share/tokend/newdir/x.py").write_text("X = 1\n")
    changed = index.apply_changes(
        [root / ".local/share/tokend/checkpoints/blobs/ab/ef01", root / ".local/share/tokend",
         root / ".local/share/tokend/newdir", root / "db/sessions.sqlite3-wal", root]
    )  # fmt: skip
    assert changed == set()
    assert index.rules.ignored(".run/tokend/daemon.sock")


def _watched_inodes() -> set[int]:
    """The inode of every folder any inotify descriptor of this process watches (the kernel's
    list, /proc/self/fdinfo)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in info.splitlines():
            if line.startswith("inotify wd:"):
                fields = dict(f.split(":", 1) for f in line.split()[1:] if ":" in f)
                inodes.add(int(fields["ino"], 16))
    return inodes


def _collect(
    watcher_root: Path, own: OwnPaths
) -> tuple[FolderWatcher, list[Path], threading.Event]:
    seen: list[Path] = []
    arrived = threading.Event()

    def on_batch(paths: frozenset[Path]) -> None:
        seen.extend(paths)
        arrived.set()

    return FolderWatcher(watcher_root, on_batch, lambda notice: None, own), seen, arrived


def test_no_inotify_watch_is_placed_in_the_own_folders_and_their_writes_are_not_reported(
    home: Path,
):
    root = home.resolve()
    watcher, seen, arrived = _collect(root, own_of(home))
    watcher.start()
    try:
        watched = _watched_inodes()
        for own in (".local/share/tokend", ".local/share/tokend/checkpoints/blobs/ab",
                    ".local/state/tokend", ".cache/tokend", ".run/tokend"):  # fmt: skip
            assert (root / own).stat().st_ino not in watched, f"{own} is watched"
        for user in ("", "src", "src/pkg", ".local", ".local/share", "db"):
            assert (root / user).stat().st_ino in watched, f"{user or 'the root'} is not watched"
        assert watcher.polled == []
        # tokend writes: a blob, a new blob folder, the database's journal, a log line
        (root / ".local/share/tokend/checkpoints/blobs/cd").mkdir()
        (root / ".local/share/tokend/checkpoints/blobs/cd/cdef").write_bytes(b"blob")
        (root / "db/sessions.sqlite3-wal").write_bytes(b"more wal")
        (root / ".local/state/tokend/daemon.log").write_text("log\nlog\n")
        assert (root / ".local/share/tokend/checkpoints/blobs/cd").stat().st_ino not in (
            _watched_inodes()
        )
        time.sleep(0.5)
        # watchdog names the user's folder `db` beside a file written in it: that folder is
        # the user's (listed again, nothing changed in it), the database's files are not
        assert set(seen) <= {root / "db"}
        arrived.clear()
        (root / "src/pkg/app.py").write_text("A = 2\n")  # the user writes
        assert arrived.wait(10)
        assert root / "src/pkg/app.py" in seen
        assert tokends(root, seen) == []
    finally:
        watcher.stop()


def test_the_polling_fallback_leaves_the_own_folders_out(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    import tokend.adapters.watch as watcher_module

    class Refusing:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def schedule(self, *args: object, **kwargs: object) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(watcher_module, "Observer", Refusing)
    monkeypatch.setattr(watcher_module, "pruned_observer", lambda excluded: None)
    root = home.resolve()
    watcher, seen, arrived = _collect(root, own_of(home))
    watcher.start()
    try:
        assert watcher.polling
        (root / ".local/share/tokend/checkpoints/blobs/ab/ff00").write_bytes(b"blob")
        (root / ".local/state/tokend/daemon.log").write_text("log\nlog\n")
        (root / "notes.md").write_text("more notes\n")
        assert arrived.wait(10)
        time.sleep(1.5)  # another poll
        assert root / "notes.md" in seen
        assert tokends(root, seen) == []
    finally:
        watcher.stop()
