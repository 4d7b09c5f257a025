"""A tag worker process as the daemon holds it (adapters.tag_workers): started, fed through its
stdin, read through its stdout, ended."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from selectors import EVENT_READ, DefaultSelector
from typing import Any

WORKER_RSS_BYTES = 120 << 20  # a worker past this after a batch retires and a fresh one follows
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


@dataclass(slots=True)
class Parse:
    """One parse under way: its work, answers, batches still to send, and the workers it
    holds (each with a batch of it), watched by its selector."""

    work: Sequence[tuple[str, str, bytes]]
    what: int
    results: list[Any]
    pending: list[list[int]]
    selector: DefaultSelector
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
