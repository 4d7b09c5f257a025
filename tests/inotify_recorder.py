"""An independent inotify recorder (tests and benches): every change event under a tree, with
libc's own inotify calls through ctypes; neither watchdog nor tokend is involved, so what it
counts is what the kernel saw, whatever tokend's watcher makes of it.

Watches every folder under the root (and folders created later) for creations, deletions,
moves, writes and attribute changes; opens and reads are not asked for.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import threading
from collections import Counter
from pathlib import Path

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
CHANGES = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
CHANGES |= IN_DELETE
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


class InotifyRecorder:
    """Records the paths of change events under `root` from construction until `close`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._folders: dict[int, str] = {}
        self._lock = threading.Lock()
        self.events: list[str] = []  # the absolute path each event named, in order
        self.overflowed = False
        self._stop_r, self._stop_w = os.pipe()
        self._watch_tree(str(root))
        self._thread = threading.Thread(target=self._read_loop, daemon=True)
        self._thread.start()

    def _watch_tree(self, top: str) -> None:
        for folder, subfolders, _files in os.walk(top):
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), CHANGES)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                    subfolders[:] = []
                    continue
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
            self._folders[wd] = folder

    def _read_loop(self) -> None:
        while True:
            readable, _, _ = select.select([self._fd, self._stop_r], [], [])
            if self._stop_r in readable:
                return
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + size]
                offset += _HEADER.size + size
                if mask & IN_Q_OVERFLOW:
                    self.overflowed = True
                    continue
                folder = self._folders.get(wd)
                if folder is None:
                    continue
                name = os.fsdecode(raw.rstrip(b"\0"))
                path = os.path.join(folder, name) if name else folder
                with self._lock:
                    self.events.append(path)
                if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                    self._watch_tree(path)

    def mark(self) -> int:
        """A point in the record, to count from (`since`)."""
        with self._lock:
            return len(self.events)

    def since(self, mark: int) -> list[str]:
        with self._lock:
            return self.events[mark:]

    def by_top_folder(self, paths: list[str]) -> Counter[str]:
        """How many of `paths` fall in each of the root's first two levels."""
        tops: Counter[str] = Counter()
        for path in paths:
            rel = Path(path).relative_to(self.root).parts
            tops["/".join(rel[:2]) or "."] += 1
        return tops

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        for fd in (self._fd, self._stop_r, self._stop_w):
            os.close(fd)
