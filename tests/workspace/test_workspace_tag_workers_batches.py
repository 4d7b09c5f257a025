"""A tag worker answers a whole batch in one frame (issue 22: a frame a file cost the daemon's
reader a wake-up, two reads and an unpickle each, 47 µs a file on the kernel), and a worker
that dies in a batch still costs at most the one file it died on: the batch goes out again a
file at a time. The oracles: the frames counted on the daemon's side of the pipe, and the tags
tokend's parser gives in this process for each file."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest

from tokend.adapters import tag_workers
from tokend.adapters.tag_wire import batches
from tokend.adapters.tag_workers import TagWorkers
from tokend.adapters.tags import TagParser

WORDS = b"the quick brown fox jumps over the lazy dog 0123456789 "
SLOW = (WORDS * (900_000 // len(WORDS)))[:900_000]  # about two seconds of tree-sitter


def _small(i: int) -> tuple[str, str, bytes]:
    return (f"m{i}.py", "python", b"def small_%d(port):\n    return open_socket(port)\n" % i)


def test_a_batch_comes_back_in_one_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    frames: list[Any] = []
    real_recv = tag_workers.recv

    def counting(stream: Any) -> Any:
        frames.append(real_recv(stream))
        return frames[-1]

    monkeypatch.setattr(tag_workers, "recv", counting)
    work = [_small(i) for i in range(300)]
    with TagWorkers(2) as workers:
        got = workers.parse(work)
    parser = TagParser()
    assert got == [parser.tags(language, source) for _, language, source in work]
    assert len(frames) == len(batches(work, 2)) < len(work)  # 8148dde: a frame a file, 300


def _batch_with_slow_file() -> list[tuple[str, str, bytes]]:
    """The first batch: two small files, the slow one, three small ones (under BATCH_BYTES)."""
    return [_small(0), _small(1), ("slow.py", "python", SLOW)] + [_small(i) for i in range(2, 40)]


def _kill_when(workers: TagWorkers, alone: bool, timeout: float = 30.0) -> int:
    """Kill the worker parsing the slow file (index 2), with others in its batch or `alone`,
    once one is (after a moment: into the slow file's parse; the batch it parses is the first
    it holds, another may wait behind it: tag_proc.AHEAD)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker in list(workers._workers):
            if 2 in worker.first() and (len(worker.first()) == 1) == alone:
                time.sleep(0.5)
                os.kill(worker.proc.pid, signal.SIGKILL)
                return worker.proc.pid
        time.sleep(0.01)
    raise AssertionError(f"no worker held the slow file {'alone ' if alone else ''}in {timeout} s")


def test_a_worker_killed_mid_batch_costs_no_file_its_tags() -> None:
    work = _batch_with_slow_file()
    first = batches(work, 2)[0]
    assert 2 in first and len(first) > 3  # the slow file inside a batch of several
    with TagWorkers(2) as workers:
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.extend(workers.parse(work)))
        thread.start()
        killed = _kill_when(workers, alone=False)
        thread.join(120)
        assert not thread.is_alive()
        assert killed not in workers.pids()
        assert workers.crashes == 1
    parser = TagParser()
    # every file's tags, the one it was parsing when killed too: the batch went out again
    # (8148dde: the file being parsed, the slow one, got the error "worker died")
    assert got == [parser.tags(language, source) for _, language, source in work]


def test_a_file_that_ends_a_worker_twice_is_the_one_without_tags(
    caplog: pytest.LogCaptureFixture,
) -> None:
    work = _batch_with_slow_file()
    with TagWorkers(2) as workers:
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.extend(workers.parse(work)))
        thread.start()
        _kill_when(workers, alone=False)  # the batch's worker, not knowing on which file
        _kill_when(workers, alone=True)  # the slow file alone in its batch: it is the one
        thread.join(120)
        assert not thread.is_alive()
        assert workers.crashes == 2
    parser = TagParser()
    assert got[2].error.startswith(tag_workers.WORKER_DIED)  # type: ignore[attr-defined]
    others = [t for i, t in enumerate(got) if i != 2]
    assert others == [parser.tags(lang, src) for i, (_, lang, src) in enumerate(work) if i != 2]
    assert "slow.py" in caplog.text
