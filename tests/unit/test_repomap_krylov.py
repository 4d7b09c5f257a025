"""The rank of a large tree (core.repomap.solve past DIRECT_MAX_FILES) is BiCGSTAB written in
numpy (core.repomap.krylov), so that a daemon on the kernel never loads SciPy's package (issue 22:
23-33 MiB of its peak). Its answers are checked against a dense solve of the same system written
out here, against SciPy's own `bicgstab` (the code main ran) bit for bit, and in two processes;
its failure to converge is main's ArithmeticError."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from tokend.adapters.sparse_product import compiled_product
from tokend.core.repomap import krylov, solve


def _loop(compiled: bool) -> krylov.Loop | None:
    return compiled_product() if compiled else None


BOTH = pytest.mark.parametrize("compiled", [True, False], ids=["scipy-loop", "numpy"])


def _graph(files: int, per_row: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays as core.repomap.edges keeps them: int64 offsets, int32 targets (distinct and
    sorted in a row), float64 weights summing to 1 in a row; about a tenth of the rows empty."""
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    for _ in range(files):
        size = 0 if rng.random() < 0.1 else int(rng.integers(1, 2 * per_row))
        rows.append(np.unique(rng.integers(0, files, size)))
    offsets = np.zeros(files + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    targets = np.concatenate(rows).astype(np.int32)
    weights = rng.random(len(targets)) + 0.01
    for r in range(files):
        a, b = offsets[r], offsets[r + 1]
        weights[a:b] /= weights[a:b].sum()
    return offsets, targets, weights


def _restart(files: int, seed: int) -> np.ndarray:
    v = np.full(files, 0.15 / files)
    for f in np.random.default_rng(seed).integers(0, files, 3):
        v[f] += 0.85 / 3
    return v


def _dense_solve(offsets, targets, weights, v):  # type: ignore[no-untyped-def]
    """y with (I - 0.85 P^T) y = v, P written out entry by entry, by LAPACK's dense solve."""
    files = len(offsets) - 1
    system = np.eye(files)
    for row in range(files):
        for e in range(int(offsets[row]), int(offsets[row + 1])):
            system[int(targets[e]), row] -= 0.85 * float(weights[e])
    return np.linalg.solve(system, v)


@BOTH
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_rank_solves_the_system_as_a_dense_solve_does(compiled: bool, seed: int) -> None:
    files = 60 + 70 * seed
    offsets, targets, weights = _graph(files, 6, seed)
    v = _restart(files, seed)
    operator = krylov.Transposed(offsets, targets, weights, files, 0.85, loop=_loop(compiled))
    assert (operator.loop is not None) == compiled  # the compiled loop is found (SciPy installed)
    got = krylov.bicgstab(operator, v, solve.ITERATIVE_RTOL)
    expected = _dense_solve(offsets, targets, weights, v)
    assert np.max(np.abs(got - expected) / np.abs(expected)) < 1e-9


@BOTH
def test_the_rank_is_scipys_bicgstab_to_the_bit(compiled: bool) -> None:
    import scipy.sparse as sp  # type: ignore[import-untyped]
    import scipy.sparse.linalg as spla  # type: ignore[import-untyped]

    files = 3_000
    offsets, targets, weights = _graph(files, 12, 7)
    transposed = sp.csr_matrix((weights, targets, offsets), shape=(files, files)).T
    scipy_operator = spla.LinearOperator(
        (files, files), matvec=lambda y: y - 0.85 * (transposed @ y), dtype=np.float64
    )
    operator = krylov.Transposed(offsets, targets, weights, files, 0.85, loop=_loop(compiled))
    for seed in (1, 2):
        v = _restart(files, seed)
        scipy_y, info = spla.bicgstab(scipy_operator, v, x0=v, rtol=1e-12, atol=0.0, maxiter=1000)
        assert info == 0
        got = krylov.bicgstab(operator, v, 1e-12)
        assert got.tobytes() == scipy_y.tobytes()


_DIGEST = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from tests.unit.test_repomap_krylov import _graph, _restart
from tokend.adapters.sparse_product import compiled_product
from tokend.core.repomap import krylov
offsets, targets, weights = _graph(2_000, 10, 11)
loop = compiled_product() if sys.argv[2] == "1" else None
operator = krylov.Transposed(offsets, targets, weights, 2_000, 0.85, loop=loop)
print(hashlib.sha256(krylov.bicgstab(operator, _restart(2_000, 5), 1e-12).tobytes()).hexdigest())
"""


@BOTH
def test_the_same_graph_gives_the_same_bits_twice_and_in_another_process(compiled: bool) -> None:
    from pathlib import Path

    offsets, targets, weights = _graph(2_000, 10, 11)
    operator = krylov.Transposed(offsets, targets, weights, 2_000, 0.85, loop=_loop(compiled))
    here = [
        hashlib.sha256(krylov.bicgstab(operator, _restart(2_000, 5), 1e-12).tobytes()).hexdigest()
        for _ in range(2)
    ]
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", _DIGEST, root, "1" if compiled else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert here[0] == here[1] == done.stdout.strip()


def test_a_rank_that_does_not_converge_raises_arithmetic_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = 400
    offsets, targets, weights = _graph(files, 8, 4)
    monkeypatch.setattr(solve, "DIRECT_MAX_FILES", 100)  # this graph is solved iteratively
    monkeypatch.setattr(krylov, "MAX_STEPS", 2)  # (it takes about 10)
    rank = solve.solver(offsets, targets, weights, files)
    with pytest.raises(ArithmeticError, match="did not converge"):
        rank(_restart(files, 1))
    with pytest.raises(ArithmeticError, match="did not converge"):  # a breakdown: A v = 0
        krylov.bicgstab(np.zeros_like, _restart(files, 1), 1e-12)


_LARGE = """
import json, sys
import numpy as np
from tokend.core.repomap import solve
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) / 1024
files, edges = solve.DIRECT_MAX_FILES + 5_000, 500_000
rng = np.random.default_rng(3)
offsets = np.zeros(files + 1, dtype=np.int64)
np.cumsum(rng.multinomial(edges, np.ones(files) / files), out=offsets[1:])
targets = rng.integers(0, files, edges).astype(np.int32)
weights = rng.random(edges) / 20
v = np.full(files, 1.0 / files)
before = rss()
y = solve.solver(offsets, targets, weights, files)(v)
print(json.dumps([rss() - before, sorted(m for m in sys.modules if m.split(".")[0] == "scipy")]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_a_large_graphs_rank_loads_no_scipy_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LARGE], capture_output=True, text=True, check=True
    )
    grew_mib, scipy_modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert scipy_modules == []  # main: 150 of SciPy's modules (sparse, linalg, ...)
    assert grew_mib < 8  # main: 28.7 MiB (this branch 3.6: the vectors, 25,000 floats each)


def test_the_numpy_products_temporaries_are_a_blocks() -> None:
    files, edges = 50_000, 2_000_000
    rng = np.random.default_rng(9)
    offsets = np.zeros(files + 1, dtype=np.int64)
    np.cumsum(rng.multinomial(edges, np.ones(files) / files), out=offsets[1:])
    targets = rng.integers(0, files, edges).astype(np.int32)
    weights = rng.random(edges)
    operator = krylov.Transposed(offsets, targets, weights, files, 0.85)
    y = rng.random(files)
    tracemalloc.start()
    try:
        got = operator.product(y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5e6  # the answer (0.4 MB) and a block; a float an edge would be 16 MB
    rows = np.repeat(np.arange(files), np.diff(offsets))
    assert np.allclose(got, np.bincount(targets, weights=weights * y[rows], minlength=files))
