"""Repeated log warnings, rate-limited: a flood of the same warning must not flood the log.

`RepeatLimit` is a logging.Filter for the daemon's file and stderr handlers. Records at
WARNING and above are grouped by (logger, level, message template): the first `burst` of a group
in each `window_s` pass; the rest are counted, not written. The first record of the group after
its window shows how many were left out, so nothing is dropped silently. Lower levels pass.
The clients' own window/logMessage copies are not filtered (each connection hears of its own
problems).

`BoundedValues` is the other filter on every handler: a log line echoes what a client sent (an
8 MB `sessionId` made one 8.4 MB line, rotating the history away), so each argument of a record
and its traceback are cut to a bounded excerpt (core/excerpt.py) before anything is written.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokend.core.excerpt import MESSAGE_CHARS, bounded

BURST = 5  # records of one kind written per window
WINDOW_S = 60.0
MAX_KINDS = 1_000  # kinds remembered at once; the oldest window is forgotten first
TRACEBACK_CHARS = 8_000  # a record's traceback, as written


@dataclass
class _Kind:
    started: float
    passed: int = 0
    held: int = 0


class RepeatLimit(logging.Filter):
    def __init__(
        self,
        burst: int = BURST,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._burst, self._window_s, self._clock = burst, window_s, clock
        self._kinds: dict[tuple[str, int, str], _Kind] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        decided = getattr(record, "_repeat_limit", None)  # the same record, another handler
        if isinstance(decided, bool):
            return decided
        passed = self._decide(record)
        record._repeat_limit = passed
        return passed

    def _decide(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None or now - kind.started >= self._window_s:
                held = kind.held if kind is not None else 0
                self._kinds.pop(key, None)
                if len(self._kinds) >= MAX_KINDS:
                    oldest = min(self._kinds, key=lambda k: self._kinds[k].started)
                    del self._kinds[oldest]
                kind = self._kinds[key] = _Kind(now)
                if held:
                    record.msg = f"{record.msg} [{held:,} more like this were not logged]"
            if kind.passed < self._burst:
                kind.passed += 1
                if kind.passed == self._burst:
                    record.msg = (
                        f"{record.msg} [repeated: more like this in the next "
                        f"{self._window_s:.0f} s are counted, not logged]"
                    )
                return True
            kind.held += 1
            return False


class BoundedValues(logging.Filter):
    """Cuts a record's message, each of its arguments and its traceback to a bounded length
    (once per record, whichever handler sees it first). Numbers pass as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_bounded", False):
            return True
        record._bounded = True
        if isinstance(record.msg, str) and len(record.msg) > MESSAGE_CHARS:
            record.msg = bounded(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_bounded_arg(arg) for arg in record.args)
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = bounded(text, TRACEBACK_CHARS)
        return True


def _bounded_arg(arg: Any) -> Any:
    if arg is None or isinstance(arg, int | float):
        return arg
    text = arg if isinstance(arg, str) else str(arg)
    return bounded(text) if len(text) > MESSAGE_CHARS else arg
