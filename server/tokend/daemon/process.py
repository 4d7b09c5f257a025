"""The daemon process's settings: its log files, how it returns memory, how its garbage
collector and its threads share the interpreter with the event loop. Set once, at start, by
listener.run_daemon (and configure_logging by main.serve_forever, before the service is built).
"""

from __future__ import annotations

import faulthandler
import gc
import io
import logging
import logging.handlers
import os
import sys
from pathlib import Path

from tokend.daemon.log_limit import BoundedValues, RepeatLimit
from tokend.daemon.spawn import is_detached

GC_THRESHOLDS = (20_000, 20, 20)  # CPython's default is (700, 10, 10)


def tune_the_collector() -> None:
    """Fewer, cheaper pauses of the cyclic garbage collector, which runs on the event loop.

    What is loaded by now (modules, the service, the model catalog) lives as long as the
    daemon: frozen, the collector's full passes no longer walk it. And connections that come
    and go leave cycles behind: collected in larger batches, less often. Measured under a
    flood of reconnecting clients: full passes of 100-600 ms before; the good connection's
    longest wait 90-140 ms with the freeze alone, 13-28 ms with the thresholds too."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


SWITCH_INTERVAL_S = 0.0005
M_TRIM_THRESHOLD = -1  # glibc mallopt parameters
M_MMAP_THRESHOLD = -3


def return_big_blocks_to_the_system() -> None:
    """A long-running daemon gives memory back after a big request: glibc raises its mmap
    threshold each time a large block is freed (up to 32 MiB), after which a 30 MB request's
    buffers stay on the heap for good (+90 MiB seen). Fixing the thresholds keeps blocks of
    1 MiB and more mmapped, so freeing them returns them. (How many arenas the daemon's threads
    share is adapters.heap.one_arena's, set once, before any thread allocates.) A no-op off
    glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 4 << 20)
    except (OSError, AttributeError):
        return


LOG_FILE_BYTES = 1 << 20  # rotated at 1 MB ...
LOG_FILE_BACKUPS = 3  # ... keeping 3 old files: at most 4 MB of log


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A RotatingFileHandler whose files are created mode 0600: the log names workspaces,
    sessions and models, which are nobody else's business."""

    def _open(self) -> io.TextIOWrapper:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        fd = os.open(self.baseFilename, flags, 0o600)
        os.fchmod(fd, 0o600)  # a file an older tokend created with the umask's mode
        return open(fd, "a", encoding=self.encoding, errors=self.errors)


def configure_logging(level: str, log_file: Path) -> None:
    """Log to `log_file` (rotated, 4 x 1 MB, mode 0600), and to stderr unless the daemon runs
    detached (spawn.py started it, TOKEND_DETACHED=1): its stderr file then receives only what a
    dying process writes, faulthandler's traceback of a fatal error included. Never stdout.
    Python warnings go to the log; repeated warnings are rate-limited (log_limit.py). pygls is
    kept at WARNING unless `level` is debug (it logs every message body at INFO). Calling it again for the same file changes nothing."""
    root = logging.getLogger()
    if any(
        isinstance(h, PrivateRotatingFileHandler) and h.baseFilename == os.path.abspath(log_file)
        for h in root.handlers
    ):
        return
    formatter = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    root.setLevel(level.upper())
    handlers: list[logging.Handler] = [
        PrivateRotatingFileHandler(
            log_file, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8"
        )
    ]
    if is_detached():
        faulthandler.enable(sys.stderr)
    else:
        handlers.append(logging.StreamHandler(sys.stderr))
    limit = RepeatLimit()  # one for both: a flood is counted once
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(limit)
        handler.addFilter(BoundedValues())  # after the limit: a dropped record costs nothing
        root.addHandler(handler)
    logging.captureWarnings(True)
    if level.lower() != "debug":
        logging.getLogger("pygls").setLevel(logging.WARNING)
