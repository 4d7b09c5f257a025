"""The checkpointer's first walk runs at a lower priority than the daemon's other threads, and
waits between files while a repo map is served (service.foreground: the OS's priority does not
reach the interpreter's lock the request shares with it)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checkpoints.conftest import wait_for
from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.service.app import App
from tokend.service.checkpoints.recorder import BACKGROUND_NICE, _yield_the_cpu

HELD_S = 600.0  # the walk's longest wait for the maps served, made longer than any test
STILL_S = 2.0  # how long the walk is watched doing nothing while a map is served


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_only_the_calling_thread_is_lowered() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []

    def walk() -> None:
        _yield_the_cpu()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=walk)
    thread.start()
    thread.join()
    assert seen == [max(before, BACKGROUND_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == before


def test_the_first_walk_saves_no_file_while_a_map_is_served(
    checkpointed: Callable[[CheckpointStore], App], tmp_path: Path
) -> None:
    """The checkpointer's first walk (every file read, hashed, compressed and saved) waits
    between files while a map is served; the composition root hands the checkpointer and the
    workspaces' indexes the same Foreground."""
    app = checkpointed(CheckpointStore(tmp_path / "checkpoints"))
    assert app.checkpoints is not None
    foreground = app.checkpoints.foreground
    foreground.most_s = HELD_S
    root, files = tmp_path / "project", [f"m{i}.py" for i in range(8)]
    root.mkdir()
    for name in files:
        (root / name).write_text(f"def {name[:-3]}():\n    return 1\n")
    key = root.resolve().as_uri()
    held = contextlib.ExitStack()
    # a map comes in once the words are counted, just before the walk (the hooks' order)
    app.workspaces.built_hooks.insert(0, lambda index: held.enter_context(foreground.serving()))
    with held:
        index = app.workspaces.open(root.as_uri())
        assert index.tags._foreground is foreground  # the composition root's one Foreground
        wait_for("the first walk to wait for the map", lambda: foreground.paused >= 1)
        deadline = time.monotonic() + STILL_S  # watched doing nothing (main: walked meanwhile)
        while time.monotonic() < deadline:
            assert not app.checkpoints.walked(key)
            time.sleep(0.05)
        assert app.checkpoints.store.baseline(key, files) == {}
    wait_for("the first walk", lambda: app.checkpoints.walked(key))
    assert sorted(app.checkpoints.store.baseline(key, files)) == files
