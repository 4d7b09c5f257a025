"""The daemon's BLAS runs on one thread once a map is asked for (adapters.blas: OpenBLAS's
threads made each dot product of the kernel's rank wait for a busy core), SciPy's too when a
small tree's direct solve loads it later; the limit itself loads no SciPy (issue 22: a daemon on
the kernel never needs it). Judged by what threadpoolctl reads from the loaded libraries
themselves, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
import numpy
from threadpoolctl import threadpool_info
import tokend.service.repomap.session_map  # the map's module: importing it limits nothing yet
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
from tokend.adapters import blas
blas.single_threaded()
blas.single_threaded()
scipy_loaded = "scipy" in sys.modules
import scipy.sparse.linalg  # as a small tree's first direct solve loads it, after the limit
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps([before, after, scipy_loaded]))
"""


def test_blas_is_kept_to_one_thread():
    env = {"OPENBLAS_NUM_THREADS": "2", "PATH": ""}  # as on a 2-core machine, whatever this is
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    before, after, scipy_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert before and max(before) == 2
    assert not scipy_loaded  # main: the limit imported scipy.sparse.linalg for its OpenBLAS
    assert len(after) == 2 and set(after) == {1}  # numpy's OpenBLAS and SciPy's
