"""The large graphs' rank (core.repomap.solve past DIRECT_MAX_FILES) in numpy alone: BiCGSTAB on
(I - damping P^T) y = v, the method and the order of operations of SciPy's `bicgstab` (1.17: no
preconditioner, its breakdown tests, its stopping rule on the residual's norm), and a product by
P^T that adds each edge's term to its target in the order of SciPy's CSC product (columns in
order, each column's entries in order). Each number is the one SciPy's solve made, bit for bit,
and SciPy's package is not loaded: a daemon on the kernel holds 23-33 MiB less (issue 22: its
Python modules and its linear algebra's OpenBLAS).

The product is SciPy's own compiled loop (`csc_matvec` of scipy/sparse/_sparsetools, an
extension module with no Python import of its own, loaded alone from its file by
adapters.sparse_product: 0.2 MiB) when the caller gives it (`loop`); else numpy's, EDGE_BLOCK edges at a time in the same order (`np.add.at`), 3-4 times
slower on the kernel's 2.8 million edges (a float column of them would be 23 MB: the blocks hold
512 KiB). The iteration's vectors are 8 bytes a file each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

EDGE_BLOCK = 65_536  # edges a step of the product holds as floats (512 KiB)
MAX_STEPS = 1000

Array = Any
# SciPy's `csc_matvec(n_row, n_col, Ap, Ai, Ax, x, y)`: y += A x for A in CSC arrays
Loop = Callable[..., None]


class Transposed:
    """y -> y - damping P^T y, for P given as CSR arrays (row r's edges: offsets[r]..[r+1])."""

    def __init__(
        self,
        offsets: Array,
        targets: Array,
        weights: Array,
        n: int,
        damping: float,
        *,
        loop: Loop | None = None,
    ):
        self.offsets, self.targets, self.weights = offsets, targets, weights
        self.n, self.damping = n, damping
        self.loop = loop
        small = int(offsets[-1]) < 2**31 and targets.dtype == np.int32
        if self.loop is not None and small and weights.dtype == np.float64:
            self.starts = offsets.astype(
                np.int32
            )  # SciPy's CSC of P^T: its indptr, as SciPy casts it
        else:
            self.loop = None
        marks = np.arange(EDGE_BLOCK, int(offsets[-1]), EDGE_BLOCK)
        cuts = np.searchsorted(offsets, marks, side="right") - 1  # the row holding each mark
        self.cuts = np.unique(np.concatenate(([0], cuts, [n])))  # rows: [cuts[i], cuts[i+1])

    def product(self, y: Array) -> Array:
        """P^T y: out[targets[k]] += weights[k] * y[row of k], k in order from zeros."""
        out = np.zeros(self.n, dtype=np.float64)
        if self.loop is not None:
            self.loop(self.n, self.n, self.starts, self.targets, self.weights, y, out)
            return out
        offsets, cuts = self.offsets, self.cuts
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            start, end = int(offsets[a]), int(offsets[b])
            if start == end:
                continue
            terms = np.repeat(y[a:b], np.diff(offsets[a : b + 1]))
            terms *= self.weights[start:end]
            np.add.at(out, self.targets[start:end], terms)  # in order: the sums SciPy makes
        return out

    def __call__(self, y: Array) -> Array:
        spread = self.product(y)
        spread *= self.damping
        return np.subtract(y, spread, out=spread)


def bicgstab(matvec: Callable[[Array], Array], b: Array, rtol: float) -> Array:
    """x with |b - A x| < rtol |b|, from x = b (A given by `matvec`); ArithmeticError when the
    method breaks down or MAX_STEPS pass first."""
    b = np.asarray(b, dtype=np.float64)
    x = b.copy()
    b_norm = np.linalg.norm(b)
    if b_norm == 0:
        return b
    atol = rtol * float(b_norm)
    tiny = np.finfo(np.float64).eps ** 2  # SciPy's breakdown bound for rho and omega
    r = b - matvec(x) if x.any() else b.copy()
    shadow = r.copy()
    p, v, s = r.copy(), np.zeros_like(r), np.empty_like(r)
    rho_prev = omega = alpha = 1.0
    for step in range(MAX_STEPS):
        if np.linalg.norm(r) < atol:
            return x
        rho = np.dot(shadow, r)
        if np.abs(rho) < tiny:
            raise ArithmeticError("the rank did not converge (BiCGSTAB info -10)")
        if step > 0:
            if np.abs(omega) < tiny:
                raise ArithmeticError("the rank did not converge (BiCGSTAB info -11)")
            beta = (rho / rho_prev) * (alpha / omega)
            p -= omega * v
            p *= beta
            p += r
        v = matvec(p)
        rv = np.dot(shadow, v)
        if rv == 0:
            raise ArithmeticError("the rank did not converge (BiCGSTAB info -11)")
        alpha = rho / rv
        r -= alpha * v
        s[:] = r
        if np.linalg.norm(s) < atol:
            x += alpha * p
            return x
        t = matvec(s)
        omega = np.dot(t, s) / np.dot(t, t)
        x += alpha * p
        x += omega * s
        r -= omega * t
        rho_prev = rho
    raise ArithmeticError(f"the rank did not converge (BiCGSTAB info {MAX_STEPS})")
