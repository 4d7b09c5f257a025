"""What a worker process of the daemon (adapters.tag_workers, adapters.word_workers) needs on
its side of the pipes, with nothing else imported: the frames it reads and writes (a pickle
after its length, as adapters.tag_wire's send and recv frame them on the daemon's side), a
thread that ends it once the daemon is gone, and its resident size."""

from __future__ import annotations

import os
import pickle
import struct
import time
from typing import IO, Any

HEADER = struct.Struct("<I")  # a frame's length (adapters.tag_wire reads it on the daemon's side)
_PARENT_POLL_S = 0.5


def send(stream: IO[bytes], value: Any) -> None:
    """`value` as one frame, written whole: the daemon's end of a worker's stdin is unbuffered,
    and one write to a full pipe that a signal interrupts writes part of it (a ptrace attach,
    py-spy's, did: the worker then waited for the rest of its batch forever)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[stream.write(view) or 0 :]
    stream.flush()


def recv(stream: IO[bytes]) -> Any:
    """The next frame of a buffered stream (a worker's stdin); EOFError at its end."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the stream ended")
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the stream ended")
    return pickle.loads(data)


def watch_parent(parent: int) -> None:
    """Exit once the daemon (`parent`) is gone (reparented), even in the middle of a long
    batch: a worker runs this in a thread of its own."""
    while True:
        time.sleep(_PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(0)


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0  # not Linux: workers are not recycled
