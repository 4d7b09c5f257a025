"""The daemon's BLAS runs on one thread once a map is asked for (adapters.blas: OpenBLAS's
threads made each dot product of the kernel's rank wait for a busy core). Judged by what
threadpoolctl reads from the loaded libraries themselves, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json
import numpy, scipy.sparse.linalg
from threadpoolctl import threadpool_info
import tokend.service.repomap.session_map  # the map's module: importing it limits nothing yet
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
from tokend.adapters import blas
blas.single_threaded()
blas.single_threaded()
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps([before, after]))
"""


def test_blas_is_kept_to_one_thread():
    env = {"OPENBLAS_NUM_THREADS": "2", "PATH": ""}  # as on a 2-core machine, whatever this is
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before and max(before) == 2
    assert after and set(after) == {1}
