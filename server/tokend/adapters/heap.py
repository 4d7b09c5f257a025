"""Giving freed memory back to the system after a big request.

glibc's malloc keeps freed memory in its arenas (one per thread that allocated: the workers that
count and store a big message have their own), so a daemon that handled a 10 MB message stays
that much bigger although nothing holds the memory. `malloc_trim(0)` returns the free pages of
every arena. Elsewhere (musl, macOS) it does not exist and nothing is done. Called once a big
request is answered (daemon.dispatch), once a refresh's tag workers end (adapters.tag_parsing:
a workspace's first build frees in small blocks about as much as its graph holds), and once a
workspace is released (daemon.main: its index, tags and checkpoint walk freed tens of MiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)


def _libc(symbol: str) -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """The C library's function `symbol`; None where the library or the function does not
    exist (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return getattr(ctypes.CDLL(name), symbol)
    except (OSError, AttributeError):
        return None


@functools.cache
def _malloc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    trim = _libc("malloc_trim")
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


M_ARENA_MAX = -8  # glibc's mallopt parameter: how many arenas malloc may make


def one_arena() -> bool:
    """Every thread's malloc served from the main arena, for good (glibc's M_ARENA_MAX = 1);
    False where mallopt does not exist. Called once when the daemon starts, before its threads:
    by default each thread that allocates gets an arena of its own, which keeps the high-water
    mark of what that thread once freed (the map requests' worker threads, the tags' build
    thread), so the daemon settled tens of MiB above what it holds (issue 22: on the kernel,
    after the first map, 458 MiB with one arena against 482 with the default)."""
    mallopt = _libc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, 1))


def release_freed_memory() -> bool:
    """Return malloc's free pages to the system; False where malloc_trim does not exist."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
