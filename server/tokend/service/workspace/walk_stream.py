"""The first walk's files handed on as they are found (issue 22): the walk yields a tree's files
in path order (adapters.file_index.walk), so the first build's tags can start on the first
chunk while the walk reads the rest of the tree. On the kernel the walk held one core for 4-6 s
and the tag workers waited for it with the other core idle; now they parse beside it.

One thread writes (the walk: `add`, then `finish` or `fail`), one reads (the tags: `paths`,
`at_least`); `entries` is the walk's table, written as it goes (each file's entry is in it
before its path is handed on).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from tokend.core.errors import Stopping
from tokend.core.workspace.fileclass import FileEntry
from tokend.service.workspace.entries import Packed, pack

HAND_ON = 250  # files found between two wake-ups of the reader (a chunk is 500)


class WalkStream:
    def __init__(self) -> None:
        self.entries: dict[str, Packed] = {}  # path -> its entry, as the walk found them
        self.found: list[str] = []  # the paths found so far, in path order
        self.done = False  # the walk has found every file (`found` is whole)
        self._failed: BaseException | None = None
        self._changed = threading.Condition()

    def add(self, path: str, entry: Packed) -> None:
        """(The walk.) One more file, after every path before it."""
        self.entries[path] = entry
        self.found.append(path)
        if len(self.found) % HAND_ON == 0:
            with self._changed:
                self._changed.notify_all()

    def finish(self) -> None:
        """(The walk.) Every file is found."""
        with self._changed:
            self.done = True
            self._changed.notify_all()

    def fail(self, error: BaseException) -> None:
        """(The walk.) It ended early: the reader raises `error`."""
        with self._changed:
            self._failed, self.done = error, True
            self._changed.notify_all()

    def at_least(self, files: int) -> int:
        """How many files are found, once there are `files` or the walk is done."""
        return self._more(files)[0]

    def paths(self) -> Iterator[str]:
        """Every path as the walk finds it, in path order (it waits for the walk)."""
        given = 0
        while True:
            end, done = self._more(given + HAND_ON)
            yield from self.found[given:end]
            given = end
            if done:
                return

    def _more(self, files: int) -> tuple[int, bool]:
        """(How many files are found, whether that is all), once `files` are or all are."""
        with self._changed:
            self._changed.wait_for(lambda: self.done or len(self.found) >= files)
            self._raise_failure()
            return len(self.found), self.done

    def _raise_failure(self) -> None:
        if self._failed is not None:
            raise self._failed


def merged(walked: Iterable[str], others: Iterable[str]) -> Iterator[str]:
    """The paths of `walked` (in path order) and of `others` in one path order, each once."""
    last = None
    for path in heapq.merge(walked, sorted(others)):
        if path != last:
            yield path
        last = path


def fill(walk: WalkStream, found: Iterable[FileEntry], stopping: threading.Event) -> bool:
    """(The walk's thread.) The files `found` into `walk`; True once all are in, False when the
    walk ended early (stopping, an error: the reader raises it)."""
    try:
        for entry in found:
            if stopping.is_set():
                raise Stopping("tokend is stopping: the workspace's first walk was not finished")
            walk.add(entry.path, pack(entry))
    except BaseException as exc:
        walk.fail(exc)
        return False
    return True


@contextmanager
def walking(walker: Callable[[WalkStream], None]) -> Iterator[WalkStream]:
    """A WalkStream that `walker` fills on a thread of its own ("tokend-walk"), while the
    caller reads it; left, the walk is waited for (the caller failed: it still ends, and the
    figures are served as before a failed tag pass)."""
    walk = WalkStream()
    thread = threading.Thread(target=walker, args=(walk,), name="tokend-walk", daemon=True)
    thread.start()
    try:
        yield walk
    finally:
        thread.join()
