"""The file index on real folders: ignore files, refusals, the persisted counts, the watcher."""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

import pytest

from tokend.adapters.file_index import read_file, resolve_inside, walk
from tokend.adapters.ignore_rules import IgnoreRules
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.watcher import BULK_MAX_DELAY_SECONDS, QUIET_SECONDS, FolderWatcher
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.errors import InvalidParams
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex


def paths_of(root: Path) -> set[str]:
    return {e.path for e in walk(root, IgnoreRules(root))}


def test_every_ignore_source_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "repo"
    for rel in [
        "a.py",
        "keep.log",
        "x.log",
        "sub/b.py",
        "sub/gen/c.py",
        "sub/d.tmp",
        "e.secret",
        "f.local",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "info" / "exclude").write_text("*.secret\n")
    (root / ".gitignore").write_text("*.log\n!keep.log\n")
    (root / "sub" / ".gitignore").write_text("gen/\n*.tmp\n")
    (root / "sub" / ".ignore").write_text("!d.tmp\n")  # ripgrep's file wins in its folder
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.local\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths_of(root) == {
        "a.py",
        "keep.log",
        "sub/b.py",
        "sub/d.tmp",
        ".gitignore",
        "sub/.gitignore",
        "sub/.ignore",
    }


def test_bad_files_are_skipped_with_a_reason_and_cost_only_themselves(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "ok.py").write_text("print('ok')\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "big.txt").write_bytes(b"a" * (1024 * 1024 + 1))
    (root / "latin1.c").write_bytes("int caf\xe9 = 1;\n".encode("latin-1"))
    outside = tmp_path / "secret.txt"
    outside.write_text("do not read\n")
    (root / "escape.txt").symlink_to(outside)
    entries = {e.path: e for e in walk(root, IgnoreRules(root))}
    assert entries["ok.py"].skipped is None and entries["ok.py"].estimate_tokens > 0
    assert "binary" in (entries["image.png"].skipped or "")
    assert "over the 1,048,576-byte limit" in (entries["big.txt"].skipped or "")
    assert "outside the workspace" in (entries["escape.txt"].skipped or "")
    latin = read_file(root, "latin1.c")
    assert latin.decoded is not None and latin.decoded.replaced and "\ufffd" in latin.decoded.text
    for bad in ["../secret.txt", str(outside), "escape.txt"]:
        with pytest.raises(InvalidParams):
            resolve_inside(root, bad)
    assert resolve_inside(root, str(root / "ok.py")) == "ok.py"


def test_exact_counts_survive_a_restart(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    text = "def handler(event):\n    return event['body']\n" * 20
    (root / "h.py").write_text(text)
    encoding = load_encoding("o200k_base")
    calls: list[str] = []

    def count(t: str) -> int:
        calls.append(t)
        return len(encoding.encode_ordinary(t))

    for _ in range(2):  # a second process: a new index on the same cache file
        cache = WorkspaceCache(tmp_path / "cache.sqlite3")
        index = WorkspaceIndex(root.as_uri(), root, cache, index_ports())
        index.build()
        (figure,) = index.figures(["h.py"], count, "o200k_base")
        assert figure.tokens == len(encoding.encode_ordinary(text)) and figure.basis == "exact"
        cache.close()
    assert len(calls) == 1


def test_a_checkout_of_2000_files_is_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "ws"
    root.mkdir()
    batches: list[frozenset[Path]] = []
    done = threading.Event()
    arrived: list[float] = []  # when each event reached the watcher (its input, not its logic)
    add = FolderWatcher._add

    def timed_add(self: FolderWatcher, path: Path) -> None:
        arrived.append(time.monotonic())
        add(self, path)

    monkeypatch.setattr(FolderWatcher, "_add", timed_add)

    names = {f"f{i:04}.py" for i in range(2000)}
    seen: set[str] = set()

    def on_batch(paths: frozenset[Path]) -> None:
        batches.append(paths)
        seen.update(p.name for p in paths)
        if seen >= names:  # a file's create and write may land in two batches: names, not sums
            done.set()

    watcher = FolderWatcher(root, on_batch, lambda notice: None)
    watcher.start()
    try:
        for i in range(2000):
            (root / f"f{i:04}.py").write_text(f"x = {i}\n")
        assert done.wait(30), f"only {len(seen & names)} of the files reported"
    finally:
        watcher.stop()
    # One batch, unless this (shared, loaded) machine paused the events on their way: a batch may
    # close after a pause of QUIET_SECONDS while it is small, BULK_QUIET_SECONDS once it is bulk,
    # or BULK_MAX_DELAY_SECONDS after its first event, so each pause of QUIET_SECONDS between two
    # events reaching the watcher allows one more batch. On a quiet machine that is exactly one.
    pauses = sum(1 for a, b in itertools.pairwise(arrived) if b - a >= QUIET_SECONDS)
    allowed = 1 + pauses + int((arrived[-1] - arrived[0]) / BULK_MAX_DELAY_SECONDS)
    assert len(batches) <= allowed, f"{len(batches)} batches, {pauses} pauses in the events"


def test_a_failing_inotify_falls_back_to_polling_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import errno

    import tokend.adapters.watch as watcher_module

    class Refusing:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def schedule(self, *args: object, **kwargs: object) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(watcher_module, "Observer", Refusing)
    notices: list[str] = []
    seen = threading.Event()
    watcher = FolderWatcher(tmp_path, lambda paths: seen.set(), notices.append)
    watcher.start()
    try:
        (tmp_path / "new.py").write_text("y = 2\n")
        assert seen.wait(10)
    finally:
        watcher.stop()
    assert watcher.polling and len(notices) == 1 and "max_user_watches" in notices[0]


def _watched(root: Path) -> tuple[WorkspaceIndex, FolderWatcher, list[set[str]], threading.Event]:
    """An index of `root` kept by the real watcher: each batch applied as the daemon does."""
    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(None), index_ports())
    index.build()
    changes: list[set[str]] = []
    arrived = threading.Event()

    def on_batch(paths: frozenset[Path]) -> None:
        changes.append(index.apply_changes(paths))
        arrived.set()

    watcher = FolderWatcher(root, on_batch, lambda notice: None)
    watcher.start()
    return index, watcher, changes, arrived


def _settle(arrived: threading.Event) -> None:
    """Wait for the batches of what was just done (the watcher hands them over within 0.2 s
    of the first event)."""
    assert arrived.wait(10), "no batch came"
    arrived.clear()
    while arrived.wait(0.5):
        arrived.clear()


def test_a_save_keeps_the_other_files_of_its_folder(tmp_path: Path):
    """watchdog names the folder of a saved file in the batch beside the file: the folder is
    listed, not taken for gone (which dropped every other file in it from the index)."""
    root = tmp_path / "ws"
    (root / "sub" / "deeper").mkdir(parents=True)
    for name in ("sub/a.py", "sub/b.py", "sub/deeper/c.py", "top.py"):
        (root / name).write_text(f"# {name}\n")
    index, watcher, changes, arrived = _watched(root)
    try:
        (root / "sub" / "a.py").write_text("x = 1\n" * 40)
        _settle(arrived)
    finally:
        watcher.stop()
    assert set(index.entries()) == {"sub/a.py", "sub/b.py", "sub/deeper/c.py", "top.py"}
    assert set().union(*changes) == {"sub/a.py"}
    assert index.entries()["sub/a.py"].size_bytes == 240


def test_folders_moved_in_created_and_moved_away(tmp_path: Path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("a = 1\n")
    outside = tmp_path / "elsewhere" / "pkg"
    (outside / "inner").mkdir(parents=True)
    (outside / "m.py").write_text("m = 1\n")
    (outside / "inner" / "n.py").write_text("n = 1\n")
    index, watcher, _changes, arrived = _watched(root)
    try:
        outside.rename(root / "sub" / "pkg")  # one event: the folder moved in
        _settle(arrived)
        assert {"sub/pkg/m.py", "sub/pkg/inner/n.py"} <= set(index.entries())
        (root / "sub" / "new").mkdir()
        (root / "sub" / "new" / "x.py").write_text("x = 1\n")
        _settle(arrived)
        assert "sub/new/x.py" in index.entries()
        (root / "sub" / "pkg").rename(tmp_path / "elsewhere" / "back")
        (root / "sub" / "a.py").unlink()
        _settle(arrived)
    finally:
        watcher.stop()
    assert set(index.entries()) == {"sub/new/x.py"}


def test_a_folder_created_past_the_watch_limit_is_polled_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The system has no inotify watch left for the folders made after the start (watchdog
    skips them silently): they are polled, a file saved in one still arrives, and the user is
    told once."""
    import ctypes
    import errno

    from watchdog.observers import inotify_c

    real = inotify_c.inotify_add_watch

    def add_watch(fd: int, path: bytes, mask: int) -> int:
        if b"late" in path:
            ctypes.set_errno(errno.ENOSPC)
            return -1
        return real(fd, path, mask)

    monkeypatch.setattr(inotify_c, "inotify_add_watch", add_watch)
    root = tmp_path / "ws"
    root.mkdir()
    notices: list[str] = []
    batches: list[frozenset[Path]] = []
    arrived = threading.Event()

    def on_batch(paths: frozenset[Path]) -> None:
        batches.append(paths)
        arrived.set()

    watcher = FolderWatcher(root, on_batch, notices.append)
    watcher.start()
    try:
        for name in ("late1", "late2"):
            (root / name).mkdir()
            _settle(arrived)
            (root / name / "x.py").write_text("x = 1\n")  # inotify sees nothing in there
            _settle(arrived)
        assert root / "late2" / "x.py" in set().union(*batches)
    finally:
        watcher.stop()
    assert watcher.polled == [root / "late1", root / "late2"]
    assert len(notices) == 1 and "max_user_watches" in notices[0] and "late1" in notices[0]


def test_a_tree_that_ignores_all_and_re_includes_its_folders_is_walked_as_git_sees_it(
    tmp_path: Path,
):
    """go-zero's root .gitignore: `*`, then `!*.*` (files with a dot) and `!*/` (every folder).
    git keeps the folders and the files with a dot in them (the oracle: `git ls-files`'s
    others, not ignored). pathspec's GitIgnoreSpec left `core/` out (its `!*/` matched through
    the folder's slash and ranked below `*`): the walk found only .gitignore and go.mod."""
    import shutil
    import subprocess

    root = tmp_path / "repo"
    for rel in ["go.mod", "LICENSE", "core/bloom/bloom.go", "core/bloom/README", "api/x.api",
                "core/Makefile"]:  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("package x\n")
    (root / ".gitignore").write_text("*\n!*.*\n!**/Makefile\n!*/\n")
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test's oracle")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = subprocess.run(
        ["git", "-c", "core.excludesFile=/dev/null", "-C", str(root), "ls-files", "--others",
         "--exclude-standard"], capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert "core/bloom/bloom.go" in listed and "LICENSE" not in listed  # (the oracle's own)
    assert paths_of(root) == set(listed)
