"""The daemon's threads allocate from one malloc arena (adapters.heap.one_arena, issue 22): by
default each thread that allocates gets an arena of its own, a 64 MiB reservation that keeps
the high-water mark of what the thread once freed. Oracle: the real daemon's mappings
(/proc/PID/maps) after a repo map was made in its worker threads: no thread arena (glibc makes
each one a 64 MiB-aligned reservation of 64 MiB, its used part read-write, the rest not)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/maps")
HEAP = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit machines


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    with real_daemons(monkeypatch) as running:
        yield running


def _thread_arenas(pid: int) -> list[str]:
    """The process's mappings laid out as glibc's thread arenas: an anonymous read-write part
    starting on a 64 MiB boundary, with the inaccessible rest of its 64 MiB after it."""
    regions = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        regions.append((start, end, fields[1], len(fields) == 5))
    found = []
    for i, (start, end, perms, anonymous) in enumerate(regions):
        if not (anonymous and perms == "rw-p" and start % HEAP == 0):
            continue
        rest = regions[i + 1] if i + 1 < len(regions) else None
        if end - start == HEAP or (rest and rest[0] == end and rest[2] == "---p"
                                   and rest[1] - start == HEAP):  # fmt: skip
            found.append(f"{start:x}-{end:x}")
    return found


def test_the_daemons_threads_share_one_arena(daemons: Daemons, tmp_path: Path) -> None:
    for i in range(40):  # a workspace whose map the daemon's threads build and rank
        (tmp_path / f"m{i}.py").write_text(
            f"from m{(i + 1) % 40} import f\n\ndef f{i}():\n    f()\n"
        )
    daemons.serve()
    pid = daemons.processes[-1].pid
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    created = editor.request("session/create", params)
    assert "result" in created, created
    session = created["result"]["sessionId"]
    got = editor.request("repoMap/get", {"sessionId": session, "budgetTokens": 1024}, timeout=120)
    editor.close()
    assert "result" in got, got
    assert "m1.py" in got["result"]["text"]
    assert _thread_arenas(pid) == []  # main: one at least


_SETTINGS_THEN_THREADS = """
import sys, threading
from tokend.adapters.heap import one_arena
from tokend.daemon.process import return_big_blocks_to_the_system

one_arena()  # serve_forever's first step ...
return_big_blocks_to_the_system()  # ... and run_daemon's, with no thread allocating between


def work():
    kept = [bytes(1000) for _ in range(10000)]
    del kept


threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("allocated", flush=True)
sys.stdin.readline()
"""


def test_the_later_heap_settings_keep_one_arena() -> None:
    """glibc fixes the arena limit at the first thread's first malloc: in the daemon one_arena's 1
    held only because some thread allocated before run_daemon's mallopt set the limit to 2 (a
    heap probe whose thread started first saw a second arena). One owner now: threads that
    allocate after both settings share the main arena."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SETTINGS_THEN_THREADS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "allocated"
        assert _thread_arenas(proc.pid) == []  # b30f9c3's process.MALLOC_ARENAS: one
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
