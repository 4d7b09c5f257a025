"""A tag worker holds its next batch while it parses one (issue 22: between two batches a worker
waited for the daemon's thread to read its answers and send it more, and the kernel's two
workers slept 1.8-2.6 s of the first map's tags). The oracles: the order of the frames written
and read on the daemon's side of the pipes, and the tags tokend's parser gives in this process."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest

from tokend.adapters import tag_proc, tag_workers
from tokend.adapters.tag_wire import batches
from tokend.adapters.tag_workers import TagWorkers
from tokend.adapters.tags import TagParser

WORDS = b"the quick brown fox jumps over the lazy dog 0123456789 "
SLOW = (WORDS * (1_200_000 // len(WORDS)))[:1_200_000]  # over BATCH_BYTES: a batch alone


def _small(i: int) -> tuple[str, str, bytes]:
    return (f"m{i}.py", "python", b"def small_%d(port):\n    return open_socket(port)\n" % i)


def _frames(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The batches sent and the answers read, in order, from now on."""
    events: list[tuple[str, int]] = []
    real_send, real_recv = tag_workers.send, tag_workers.recv

    def sending(stream: Any, value: Any) -> None:
        if isinstance(value, list):  # a batch: (index, language, source, what, whole) each
            events.append(("sent", len(value)))
        real_send(stream, value)

    def receiving(stream: Any) -> Any:
        got = real_recv(stream)
        events.append(("answered", len(got[0])))
        return got

    for module in (tag_workers, tag_proc):  # (c84769f sends from tag_workers)
        monkeypatch.setattr(module, "send", sending, raising=False)
    monkeypatch.setattr(tag_workers, "recv", receiving)
    return events


def _parsed_in_three_batches() -> None:
    work = [_small(i) for i in range(48)]
    assert [len(b) for b in batches(work, 1)] == [16, 16, 16]
    with TagWorkers(1) as workers:
        got = workers.parse(work)
    parser = TagParser()
    assert got == [parser.tags(language, source) for _, language, source in work]


def test_a_worker_is_sent_its_next_batch_before_its_answer_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = _frames(monkeypatch)
    _parsed_in_three_batches()
    # the second batch went out before the first one's answers were read, and each answer was
    # followed by the next batch while one was still held (c84769f: sent, answered, sent, ...)
    assert events == [("sent", 16), ("sent", 16), ("answered", 16), ("sent", 16),
                      ("answered", 16), ("answered", 16)]  # fmt: skip


def test_where_a_pipe_size_cannot_be_set_no_batch_is_sent_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS's fcntl has no F_SETPIPE_SZ (first29's e668ba6 raised AttributeError there, at a
    worker's start): its pipe's room unknown, a batch goes once the one before is answered, as
    before first29 (a batch written ahead into a full pipe would block the daemon's thread)."""
    events = _frames(monkeypatch)
    monkeypatch.delattr(tag_proc.fcntl, "F_SETPIPE_SZ")
    _parsed_in_three_batches()
    assert events == [("sent", 16), ("answered", 16)] * 3


def test_a_worker_killed_on_a_file_with_a_batch_ahead_costs_that_file_alone() -> None:
    work = [("slow.py", "python", SLOW)] + [_small(i) for i in range(40)]
    assert batches(work, 1)[0] == [0]  # the slow file alone in the first batch
    with TagWorkers(1) as workers:
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.extend(workers.parse(work)))
        thread.start()
        deadline = time.monotonic() + 30
        while not any(w.first() == [0] and len(w.ends) == 2 for w in workers._workers):
            assert time.monotonic() < deadline, "the slow file's worker held no batch ahead"
            time.sleep(0.01)
        time.sleep(0.3)  # into the slow file's parse
        os.kill(workers.pids()[0], signal.SIGKILL)
        thread.join(120)
        assert not thread.is_alive()
        assert workers.crashes == 1
    parser = TagParser()
    assert got[0].error.startswith(tag_workers.WORKER_DIED)  # type: ignore[attr-defined]
    # the batch sent ahead was never read by the worker that died: it is parsed, not blamed
    assert got[1:] == [parser.tags(language, source) for _, language, source in work[1:]]
