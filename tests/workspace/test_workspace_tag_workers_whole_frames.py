"""A frame to a worker is written whole even when a signal interrupts the write (issue 22, found
with py-spy attached to a process feeding tag workers: its batch was written in part, and the
worker waited for the rest forever, as did the daemon for its answers). The daemon's end of a
worker's stdin is unbuffered: one write to a full pipe that a signal interrupts returns the
part it wrote. The oracle: the bytes read at the other end of the pipe."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from pathlib import Path

from tokend.adapters.worker_pipe import HEADER, send

WRITE_SYSCALL = 1  # x86_64's write(2), as /proc/.../syscall names it


def _in_write(tid: int) -> bool:
    try:
        return Path(f"/proc/self/task/{tid}/syscall").read_text().split()[0] == str(WRITE_SYSCALL)
    except (OSError, IndexError):
        return False


def test_a_frame_interrupted_by_a_signal_is_still_written_whole() -> None:
    read_end, write_end = os.pipe()
    value = [(i, "c", bytes([i % 251]) * 40_000) for i in range(40)]  # 1.6 MB: 25 pipes full
    writer = threading.get_native_id()
    handled: list[int] = []
    old = signal.signal(signal.SIGUSR1, lambda signum, _frame: handled.append(signum))
    got: list[bytes] = []

    def interrupt_then_read() -> None:
        deadline = time.monotonic() + 30
        while not _in_write(writer) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the writer blocks in write(2) on the full pipe
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
        time.sleep(0.2)
        with open(read_end, "rb", buffering=0) as stream:
            chunks = []
            while chunk := stream.read(1 << 16):
                chunks.append(chunk)
            got.append(b"".join(chunks))

    reader = threading.Thread(target=interrupt_then_read)
    reader.start()
    try:
        with open(write_end, "wb", buffering=0) as stream:  # unbuffered, as Popen's bufsize=0
            send(stream, value)
    finally:
        reader.join(60)
        signal.signal(signal.SIGUSR1, old)
    assert handled == [signal.SIGUSR1]  # the write was interrupted
    (size,) = HEADER.unpack(got[0][: HEADER.size])
    assert len(got[0]) == HEADER.size + size  # 8148dde: the part before the signal (65,536)
    assert pickle.loads(got[0][HEADER.size :]) == value
