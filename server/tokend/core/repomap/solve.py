"""The repo map's personalized PageRank, solved exactly: y = solve(v) for (I - DAMPING P^T) y = v.

Up to DIRECT_MAX_FILES files the system's LU factors are made once per graph version (SciPy's
SuperLU) and each focus is one pair of triangular solves; past it (the kernel) the factors
would fill gigabytes, so the same system is solved by BiCGSTAB to a relative residual of
ITERATIVE_RTOL (core.repomap.krylov): SciPy's method, its order of operations and its compiled
product, written out in numpy so that SciPy's package is not loaded for it (issue 22: 23-33 MiB
of the daemon's peak on the kernel). The same numbers in every process, and the same as SciPy's
`bicgstab`, bit for bit (tests/unit/test_repomap_krylov.py; bench/kernel's maps).

SciPy is imported at the first direct solve, not with the repo map: a daemon holds its 34 MiB
(its sparse and linear-algebra modules, their OpenBLAS) only once a map of a tree of at most
DIRECT_MAX_FILES files is asked for (tests/daemon/test_daemon_start_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokend.core.repomap import krylov

DAMPING = 0.85
DIRECT_MAX_FILES = 20_000  # larger graphs are solved iteratively
ITERATIVE_RTOL = 1e-12

Array = Any
Product = Callable[[], krylov.Loop | None]  # the compiled product, found when first needed


def no_product() -> krylov.Loop | None:
    """No compiled product: numpy's (core.repomap.krylov)."""
    return None


def solver(
    offsets: Array, targets: Array, weights: Array, n: int, product: Product | None = None
) -> Callable[[Array], Array]:
    """y = solve(v) for the row-normalized graph given as CSR arrays (n files); `product()`:
    the compiled loop of P^T's product (krylov.Loop) past DIRECT_MAX_FILES, or None (numpy's)."""
    if n > DIRECT_MAX_FILES:
        operator = krylov.Transposed(
            offsets, targets, weights, n, DAMPING, loop=(product or no_product)()
        )
        return lambda v: krylov.bicgstab(operator, v, ITERATIVE_RTOL)
    import scipy.sparse as sp  # type: ignore[import-untyped]  # SciPy ships no stubs
    import scipy.sparse.linalg as spla  # type: ignore[import-untyped]

    p_matrix = sp.csr_matrix((weights, targets, offsets), shape=(n, n))
    system = (sp.identity(n, format="csc") - DAMPING * p_matrix.T).tocsc()
    solve: Callable[[Array], Array] = spla.splu(system).solve
    return solve
