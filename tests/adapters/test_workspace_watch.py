"""The watchdog adapter (adapters.watch) watching one folder without its subfolders, as a
followed transcript's folder is watched: with inotify, and polled when inotify refuses.

Oracles: the files this test writes on disk, and what the watch reported."""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path

import pytest

from tokend.adapters.watch import PathWatch

WAIT_SECONDS = 10.0


def _watching(root: Path) -> tuple[PathWatch, set[Path], threading.Event, list[str]]:
    seen: set[Path] = set()
    arrived = threading.Event()
    notices: list[str] = []

    def on_path(path: Path) -> None:
        seen.add(path)
        if path.name == "a.jsonl":
            arrived.set()

    return PathWatch(root, on_path, notices.append, recursive=False), seen, arrived, notices


def _write(root: Path) -> None:
    (root / "sub" / "b.jsonl").write_text("{}\n")  # below the folder: not watched
    (root / "a.jsonl").write_text("{}\n")


def test_a_flat_watch_reports_the_files_of_its_folder_only(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    watch, seen, arrived, notices = _watching(tmp_path)
    watch.start()
    try:
        _write(tmp_path)
        assert arrived.wait(WAIT_SECONDS), "the write was not reported"
        time.sleep(0.3)
    finally:
        watch.stop()
    assert tmp_path / "sub" / "b.jsonl" not in seen
    assert not watch.polling and notices == []


def test_a_flat_watch_polls_its_folder_when_no_inotify_instance_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import tokend.adapters.watch as watch_module

    class NoInstance:  # what watchdog raises at fs.inotify.max_user_instances
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise OSError(errno.EMFILE, "inotify instance limit reached")

    monkeypatch.setattr(watch_module, "Observer", NoInstance)
    (tmp_path / "sub").mkdir()
    watch, seen, arrived, notices = _watching(tmp_path)
    watch.start()
    try:
        _write(tmp_path)
        assert arrived.wait(WAIT_SECONDS), "the poll did not report the write"
        time.sleep(1.2)  # one more poll
    finally:
        watch.stop()
    assert tmp_path / "sub" / "b.jsonl" not in seen
    assert watch.polling and watch.polled == [tmp_path]
    assert len(notices) == 1 and "raise fs.inotify.max_user_instances" in notices[0]
    for thread in watch.threads():
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive()


def test_importing_the_adapter_leaves_watchdogs_logger_alone_until_a_watch_starts(
    tmp_path: Path,
):
    """The filter of watchdog's noise at a stopped emitter is installed where a watch starts:
    importing adapters.watch (as every command importing the composition root does) installed it
    before. A fresh interpreter: this process has started watches already."""
    import subprocess
    import sys

    probe = (
        "import logging, pathlib, sys\n"
        "from tokend.adapters.watch import PathWatch\n"
        "inotify = logging.getLogger('watchdog.observers.inotify')\n"
        "print(len(inotify.filters))\n"
        "for _ in range(2):\n"
        "    watch = PathWatch(pathlib.Path(sys.argv[1]), print, print, recursive=False)\n"
        "    watch.start()\n"
        "    watch.stop()\n"
        "print(len(inotify.filters))\n"
        "record = inotify.makeRecord('watchdog.observers.inotify', logging.ERROR, 'probe', 1,\n"
        "    'InotifyEmitter.queue_events() called when the thread is inactive', (), None)\n"
        "print(inotify.filter(record))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "1", "False"], done.stdout + done.stderr
