"""A change on disk reaches the listeners even while the checkpointer is busy: real service,
real checkpoint store, a real folder, real writes and the real watcher."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.service.app import App, assemble_app, open_service
from tokend.service.workspace.figures import FileFigure

WAIT_SECONDS = 20.0  # how long a condition may take on a loaded machine (not a figure)


async def until(what: str, condition: object) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    service = open_service(None, f"sqlite:///{tmp_path}/tokend.sqlite3")
    app = assemble_app(service, checkpoint_store=CheckpointStore(tmp_path / "checkpoints"))
    yield app
    app.close()


async def test_a_save_is_announced_while_the_checkpointer_holds_the_workspace(
    app: App, tmp_path: Path
):
    """The kernel bench's lost notification: the first walk's checkpoint (every file of the
    tree read and saved, minutes on the kernel) holds the workspace's checkpoint lock; the
    watcher's batch used to wait for it before the index saw the change."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    for n in range(20):
        (root / "src" / f"m{n}.py").write_text(f"def fn_{n}():\n    return {n}\n")
    checkpoints, workspaces = app.checkpoints, app.workspaces
    figures: list[FileFigure] = []
    workspaces.subscribe(root.as_uri(), lambda uri, got: figures.extend(got), lambda n: None)
    index = await workspaces.ready(root.as_uri())
    await until("the first walk's checkpoint", lambda: checkpoints.walked(index.uri))

    edited = root / "src" / "m3.py"
    with checkpoints.lock(index.uri):  # as on_built holds it while it saves every file
        edited.write_text("def fn_3():\n    return 'a much longer body than before'\n")
        await until(
            "the figure of the saved file, with the checkpointer busy",
            lambda: any(f.path == "src/m3.py" for f in figures),
        )
    figure = next(f for f in figures if f.path == "src/m3.py")
    assert figure.size_bytes == edited.stat().st_size
    await until(  # and the checkpointer, once free, still logs the change
        "the change in the checkpoint log",
        lambda: any(c.path == "src/m3.py" for c in checkpoints.store.changes(index.uri)),
    )


def test_reading_a_whole_tree_puts_nothing_in_the_watch_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The kernel bench's other loss: the tags and the checkpointer read all 78,000 files, and
    every open and close went into inotify's queue (16,384 events), which overflowed and lost
    the save among them. Reads are not asked for any more: a tree read whole gives no event,
    and a save made meanwhile arrives."""
    import threading

    import tokend.adapters.watch as watcher_module
    from tokend.adapters.watcher import FolderWatcher

    root = tmp_path / "tree"
    for n in range(400):
        (root / f"d{n % 20}").mkdir(parents=True, exist_ok=True)
        (root / f"d{n % 20}" / f"f{n}.c").write_text(f"int f{n}(void) {{ return {n}; }}\n")
    kinds: list[str] = []
    real = watcher_module._Collector.on_any_event

    def spy(self: object, event: object) -> None:
        kinds.append(event.event_type)  # type: ignore[attr-defined]
        real(self, event)  # type: ignore[arg-type]

    monkeypatch.setattr(watcher_module._Collector, "on_any_event", spy)
    batches: list[frozenset[Path]] = []
    arrived = threading.Event()
    saved = root / "d3" / "f3.c"

    def on_batch(paths: frozenset[Path]) -> None:
        batches.append(paths)
        if saved in paths:
            arrived.set()

    watcher = FolderWatcher(root, on_batch, lambda notice: None)
    watcher.start()
    try:
        for _ in range(5):  # 2,000 files read, as a build reads them
            for path in sorted(root.rglob("*.c")):
                path.read_bytes()
        time.sleep(0.5)
        assert kinds == [] and batches == []
        saved.write_text("int f3(void) { return 33; }\n")
        assert arrived.wait(WAIT_SECONDS), "the save never arrived"
    finally:
        watcher.stop()
    assert set(kinds) <= {"modified", "closed", "created"}
