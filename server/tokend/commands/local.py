"""The app a command builds for itself when no daemon answers (service/app.py's open_app)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tokend.service.app import App, open_app

if TYPE_CHECKING:
    from tokend.adapters.checkpoint_store import CheckpointStore


@contextmanager
def local_app(
    database_url: str | None, checkpoint_store: CheckpointStore | None = None
) -> Iterator[App]:
    """The app on the store, for this command only, with the current folder's settings: its
    snapshots carry what the daemon's do (spend warnings, rate headroom). Closed without saving
    the calibration: nothing here calibrates, and a running daemon may have saved a newer one."""
    app = open_app(Path.cwd(), database_url, checkpoint_store=checkpoint_store)
    try:
        yield app
    finally:
        app.close(save_calibration=False)
        if checkpoint_store is not None:
            checkpoint_store.close()
