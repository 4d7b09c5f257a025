"""The checkpointer's first walk runs at a lower priority than the daemon's other threads."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from tokend.service.checkpoints.recorder import BACKGROUND_NICE, _yield_the_cpu


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_only_the_calling_thread_is_lowered() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []

    def walk() -> None:
        _yield_the_cpu()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=walk)
    thread.start()
    thread.join()
    assert seen == [max(before, BACKGROUND_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == before
