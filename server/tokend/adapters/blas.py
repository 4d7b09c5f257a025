"""The BLAS library numpy and SciPy call (OpenBLAS in their wheels) kept to one thread.

The repo map's rank on a large tree (the kernel: 78,000 files) is an iterative solve whose dot
products and norms go to BLAS; OpenBLAS splits each of them over threads, and on a machine
whose cores are busy (the daemon's case: it shares them with the editor, the agent and the
build) every split waits for a core, so a dot product of 78,000 numbers took 5 ms with the
threads against 0.08 ms on one (bench: repomap_eval's kernel notes). The daemon gains nothing
from BLAS threads anyway: its numeric work is small, and done off the event loop one request at a
time. `single_threaded` limits every BLAS library loaded in this process, once, for good
(threadpoolctl), and one loaded later starts with one thread (OPENBLAS_NUM_THREADS, read by
OpenBLAS as it loads): SciPy's, loaded only for a small tree's direct solve (core.repomap.solve;
importing it here held 34 MiB in a daemon on the kernel, which never needs it: issue 22).
"""

from __future__ import annotations

import os
import threading

_done = threading.Event()
_lock = threading.Lock()


def single_threaded() -> None:
    """Limit BLAS to one thread in this process (once; later calls cost nothing)."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        import numpy  # noqa: F401  # loads OpenBLAS: the limit reaches the library numpy uses
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # no stubs

        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # SciPy's own OpenBLAS, if it is loaded later
        threadpool_limits(limits=1, user_api="blas")
        _done.set()
