"""bench/scale_tree.family_rss_parts (the bench's RSS of the daemon with its workers) counts a
child started by a thread that still runs: Linux lists a child under the thread that started
it, and the daemon starts its tag and word workers from its build threads (issue 22: the
kernel bench's sum left them out). Oracle: the count of children before and after one is started."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from bench.scale_tree import family_rss_parts


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_child_of_a_running_thread_is_counted() -> None:
    started: list[subprocess.Popen[bytes]] = []
    release = threading.Event()
    before = len(family_rss_parts(os.getpid())[1])  # (children of the tests before this one)

    def start() -> None:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
        release.wait(30)

    thread = threading.Thread(target=start)
    thread.start()
    try:
        while not started:
            release.wait(0.01)
        own, children = family_rss_parts(os.getpid())
        assert own > 0
        assert len(children) == before + 1, children  # main: before (the main thread's list)
    finally:
        release.set()
        thread.join()
        started[0].kill()
        started[0].wait()
