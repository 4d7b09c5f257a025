"""The repo map's personalized PageRank, solved exactly: y = solve(v) for (I - DAMPING P^T) y = v.

Up to DIRECT_MAX_FILES files the system's LU factors are made once per graph version (SciPy's
SuperLU) and each focus is one pair of triangular solves; past it (the kernel) the factors
would fill gigabytes, so the same system is solved with SciPy's BiCGSTAB to a relative residual
of ITERATIVE_RTOL. No hand-written iteration: the same numbers in every process.

SciPy is imported at the first solve, not with the repo map: a daemon holds its 26 MiB (its
sparse and linear-algebra modules, their OpenBLAS) only once a map is asked for (issue 22: at
start the daemon held 135 MiB; tests/daemon/test_daemon_start_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

DAMPING = 0.85
DIRECT_MAX_FILES = 20_000  # larger graphs are solved iteratively
ITERATIVE_RTOL = 1e-12

Array = Any


def solver(offsets: Array, targets: Array, weights: Array, n: int) -> Callable[[Array], Array]:
    """y = solve(v) for the row-normalized graph given as CSR arrays (n files)."""
    import scipy.sparse as sp  # type: ignore[import-untyped]  # SciPy ships no stubs
    import scipy.sparse.linalg as spla  # type: ignore[import-untyped]

    p_matrix = sp.csr_matrix((weights, targets, offsets), shape=(n, n))
    if n <= DIRECT_MAX_FILES:
        system = (sp.identity(n, format="csc") - DAMPING * p_matrix.T).tocsc()
        solve: Callable[[Array], Array] = spla.splu(system).solve
        return solve
    transposed = p_matrix.T  # a CSC view: no copy
    operator = spla.LinearOperator(
        (n, n), matvec=lambda y: y - DAMPING * (transposed @ y), dtype=np.float64
    )

    def iterate(v: Array) -> Array:
        y, info = spla.bicgstab(operator, v, x0=v, rtol=ITERATIVE_RTOL, atol=0.0, maxiter=1000)
        if info != 0:
            raise ArithmeticError(f"the rank did not converge (BiCGSTAB info {info})")
        return np.asarray(y)

    return iterate
