"""A tag worker process as the daemon holds it (adapters.tag_workers): started, fed through its
stdin, read through its stdout, ended."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from selectors import EVENT_READ, DefaultSelector
from typing import Any

from tokend.adapters.worker_pipe import send

Work = tuple[str, str, bytes]  # (path: for the log, language, source)

WORKER_RSS_BYTES = 120 << 20  # a worker past this after a batch retires and a fresh one follows
# A worker's stdin pipe is made this large, so a batch sent ahead (adapters.tag_workers: the
# next one while it parses one) waits in the pipe whole and the daemon's write does not block.
PIPE_BYTES = 1 << 20
# Batches a worker holds at once: the next waits in its stdin while it parses one, so it does not
# wait for the daemon's thread to read its answers and send more (issue 22: the kernel's tag
# workers slept 1.8-2.6 s of the first map's tags, the daemon's threads busy).
AHEAD = 2
# glibc's heap in a worker: big blocks mmapped (given back when freed), freed memory trimmed,
# one arena. Without, a worker parsing the kernel's C grew to 300 MiB of free heap.
_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 20), "MALLOC_TRIM_THRESHOLD_": str(4 << 20),
               "MALLOC_ARENA_MAX": "1"}  # fmt: skip
# A word worker's (adapters.word_workers) both at 128 KiB: its heap is a file's tokens and
# counts, freed after each file; with the tag workers' it kept about 5 MiB more after a 1 MiB
# source than before it (issue 22: two of them beside the daemon in the words' pass).
_MALLOC_ENV_BY_PROGRAM = {"tokend.adapters.word_workers": {
    "MALLOC_MMAP_THRESHOLD_": str(128 << 10), "MALLOC_TRIM_THRESHOLD_": str(128 << 10)}}  # fmt: skip


class WorkerProcess:
    """A worker process (`python -m tokend.adapters.tag_workers`, or `program`) and the batch
    it was sent."""

    def __init__(
        self, rss_limit: int = WORKER_RSS_BYTES, program: str = "tokend.adapters.tag_workers"
    ) -> None:
        server = str(Path(__file__).resolve().parents[2])  # the folder holding `tokend`
        env = {**os.environ, **_MALLOC_ENV, **_MALLOC_ENV_BY_PROGRAM.get(program, {})}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (server, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", program, str(rss_limit)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.batch: list[int] = []  # indexes of the files sent, not yet answered
        self.ends: list[int] = []  # the last index of each batch sent and not all answered
        self.pipe_bytes = _enlarged(self.stdin.fileno())  # what its stdin holds unread

    def first(self) -> list[int]:
        """The indexes of the first batch it holds (the one it parses: it reads the next only
        once it has answered it)."""
        return self.batch[: self.batch.index(self.ends[0]) + 1] if self.ends else []

    def top_up(
        self, pending: list[list[int]], work: Sequence[Work], what: int, whole: bool = True
    ) -> bool:
        """Sent the next of `pending` until it holds AHEAD batches; whether it holds one (or
        was sent one: to a worker that died idle, the batch goes back, its end-of-file next)."""
        gave = False
        for _ in range(AHEAD - len(self.ends)):
            if not self.give(pending, work, what, whole):
                break
            gave = True
        return gave or bool(self.ends)

    def give(
        self, pending: list[list[int]], work: Sequence[Work], what: int, whole: bool = True
    ) -> int:
        """Send the next of `pending`: 1 if it went, 0 when nothing is left (or, for a batch
        sent ahead of one held, when it would not wait in the pipe whole: it goes later). Each
        file goes as (index, language, source, what, whole): `whole`, whether a count of its
        words carries its whole tokens (core.repomap.text.count_words)."""
        if not pending:
            return 0
        if self.ends and sum(len(work[i][2]) for i in pending[-1]) > self.pipe_bytes // 2:
            return 0
        batch = pending.pop()
        try:
            send(self.stdin, [(i, work[i][1], work[i][2], what, whole) for i in batch])
        except OSError:  # it died idle: its end-of-file comes next, and the batch goes back
            pending.append(batch)
            return 1
        self.batch.extend(batch)
        self.ends.append(batch[-1])
        return 1

    def stop(self, kill: bool = False) -> None:
        """Ended: once its batch is done (its stdin closed), or now with `kill`."""
        if kill:
            self.proc.kill()
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


def _enlarged(fd: int) -> int:
    """The pipe `fd` made PIPE_BYTES large where the system allows it; its size (0 where the
    system cannot tell it, macOS: then no batch is sent ahead, a write could block)."""
    set_size, get_size = (getattr(fcntl, n, None) for n in ("F_SETPIPE_SZ", "F_GETPIPE_SZ"))
    if set_size is None or get_size is None:
        return 0
    try:
        return fcntl.fcntl(fd, set_size, PIPE_BYTES)
    except OSError:  # over the user's pipe limits: the pipe keeps its size
        return fcntl.fcntl(fd, get_size)


@dataclass(slots=True)
class Parse:
    """One parse under way: its work, answers, batches still to send, and the workers it
    holds (each with a batch of it), watched by its selector."""

    work: Sequence[tuple[str, str, bytes]]
    what: int
    results: list[Any]
    pending: list[list[int]]
    selector: DefaultSelector
    whole: bool = True  # words counted with their whole tokens (core.repomap.text.count_words)
    held: set[WorkerProcess] = field(default_factory=set)
    waker: tuple[int, int] = (-1, -1)  # a pipe in its selector: written when a worker is freed

    def __post_init__(self) -> None:
        self.waker = os.pipe()
        for end in self.waker:
            os.set_blocking(end, False)
        self.selector.register(self.waker[0], EVENT_READ, None)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # (full: it wakes anyway)
            os.write(self.waker[1], b"\0")

    def woken(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.waker[0], 512):
                pass

    def close(self) -> None:
        self.selector.close()
        for end in self.waker:
            os.close(end)

    def hold(self, worker: WorkerProcess) -> None:
        self.held.add(worker)
        self.selector.register(worker.stdout, EVENT_READ, worker)

    def drop(self, worker: WorkerProcess) -> None:
        self.held.discard(worker)
        self.selector.unregister(worker.stdout)
