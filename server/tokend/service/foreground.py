"""Requests a user waits for go before the daemon's background bookkeeping (issue 22).

A repo map request ranks and fits on one thread, mostly numpy steps; meanwhile other threads of
the same process do bookkeeping nobody waits for: the first walk's checkpoint (every file of the
tree read, hashed, compressed and saved: minutes on the kernel) and the count of what files say
(each file read and hashed again). Their threads run at nice 10, but the OS's priority does not
reach the interpreter's lock: each time the request's thread let it go for a numpy step, a
background thread took it, and the request waited to get it back. On the kernel the new focus
that took 0.14 CPU s in a quiet process took 0.39 s beside such a thread.

`serving()` marks a request being served; a background loop calls `yield_to()` between its
steps, which waits while any request is served, at most `most_s` at a time, so the bookkeeping
goes on (slower) even under a stream of requests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

YIELD_MOST_S = 1.0  # the longest a background step waits for the requests being served


class Foreground:
    """The requests being served in this process, which background loops let go first."""

    def __init__(self, most_s: float = YIELD_MOST_S) -> None:
        self.most_s = most_s
        self._served = 0
        self._idle = threading.Condition(threading.Lock())
        self.paused = 0  # how many times a background step waited (logs, tests)

    @contextmanager
    def serving(self) -> Iterator[None]:
        """A request is being served for the duration (nests; any thread)."""
        with self._idle:
            self._served += 1
        try:
            yield
        finally:
            with self._idle:
                self._served -= 1
                if not self._served:
                    self._idle.notify_all()

    def yield_to(self) -> None:
        """(A background loop, between its steps.) Wait while a request is being served, at
        most `most_s`."""
        with self._idle:
            if self._served:
                self.paused += 1
                self._idle.wait_for(lambda: not self._served, timeout=self.most_s)
