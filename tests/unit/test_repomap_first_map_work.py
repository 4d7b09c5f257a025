"""The first map's rows cost what they must (core.repomap.imports, links, edges), and stay what
they were bit for bit.

Found (issue 18's figures): SQLAlchemy's first `context/assemble` was 1.28x the tree before the
reshape. In-process, its rows took 0.079 CPU s on main against 0.013 on that tree: issue 24's
imports. An absolute import was resolved again in each folder (counted in
test_repomap_reexport_work.py), a relative one through posixpath; each reached path's row was
found by bisection; and a reference to a name too common to say anything alone was checked
against its file's imports by a binary search of every (file, definer) pair. Judged by rows equal
to those a plain derivation writes (the search, the sort by two keys, the posixpath resolution:
written again here)."""

from __future__ import annotations

import posixpath
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap import edges, imports
from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.tags import Definition, FileTags

FOLDERS = ("", "app", "app/v1.2", "app/v1.2/core", "lib", "lib/x.y/z")


def _tree(seed: int, files: int = 60) -> dict[str, FileTags]:
    """Python files in dotted and plain folders: absolute and relative imports (some reaching
    packages that re-export), references to names defined in one file and in many."""
    draw = random.Random(seed)
    paths = sorted({f"{draw.choice(FOLDERS)}/m{n}.py".lstrip("/") for n in range(files)})
    paths += [f"{f}/__init__.py".lstrip("/") for f in FOLDERS if f]
    common = [f"name{k}" for k in range(4)]  # each defined by most files: over MAX_DEFINERS
    tree = {}
    for i, path in enumerate(paths):
        specs = {draw.choice(["app", "app.m3", "lib", "os.path", "m1", "app.v1.core"])}
        specs |= {draw.choice(["." * d for d in (1, 2, 3)]) + draw.choice(["", "m2", "core"])}
        defs = [Definition(f"own{i}", 1, ""), *(Definition(c, 5 + k, "") for k, c in
                                                enumerate(common) if draw.random() < 0.9)]  # fmt: skip
        refs = {f"own{draw.randrange(len(paths))}": draw.randint(1, 4) for _ in range(4)}
        refs |= {c: draw.randint(1, 3) for c in common}
        tree[path] = FileTags(tuple(defs), refs, imports=tuple(sorted(specs)))
    return tree


def _posixpath_python(path: str, spec: str, index: imports.PathIndex) -> tuple[str, ...]:
    """A relative Python import as posixpath resolves it (the module docstring's rule)."""
    dots = len(spec) - len(spec.lstrip("."))
    folder = posixpath.dirname(path)
    for _ in range(dots - 1):
        folder = posixpath.dirname(folder)
    rest = spec[dots:].replace(".", "/")
    base = posixpath.join(folder, rest) if rest else folder
    tried = [base + ".py", base + ".pyi"]
    tried += [posixpath.join(base, "__init__.py"), posixpath.join(base, "__init__.pyi")]
    return tuple(p for p in tried if p in index.paths)


@settings(max_examples=200, deadline=None)
@given(
    path=st.sampled_from(
        [f"{f}/m.py".lstrip("/") for f in FOLDERS] + ["app/v1.2/core/__init__.py"]
    ),
    spec=st.tuples(st.integers(1, 5), st.sampled_from(["", "m2", "core", "v1.core", "x.y"])),
)
def test_a_relative_import_names_what_posixpath_resolves(path: str, spec: tuple[int, str]) -> None:
    index = imports.path_index(_tree(3))
    written = "." * spec[0] + spec[1]
    assert imports._resolve(path, written, index) == _posixpath_python(path, written, index)


def _rows(graph: RepoGraph) -> list[Any]:
    e = graph.edges()
    return [e.offsets.tolist(), e.targets.tolist(), e.weights.tolist(), e.totals.tolist()]


def _plain_resolved(codes: Any, code: Any, of: Any, definers: Any, n: int) -> Any:
    """Which pairs stay and each reference's share, by a binary search of the pairs."""
    if not len(codes):
        return np.ones(len(of), dtype=bool), definers
    at = np.minimum(np.searchsorted(codes, code), len(codes) - 1)
    inside = codes[at] == code
    hits = np.bincount(of, weights=inside, minlength=len(definers))
    resolved = hits > 0
    chosen = np.where(resolved[of], inside, definers[of] <= edges.MAX_DEFINERS)
    return chosen, np.where(resolved, hits * (1.0 / edges.RESOLVED_WEIGHT), definers)


class _TwoKeys:
    """np with argsort as a stable sort by (source, target) written as lexsort."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def argsort(self, pair: Any, kind: str) -> Any:
        assert kind == "stable"
        return np.lexsort((pair % self.n, pair // self.n))


@pytest.mark.parametrize("seed", [1, 2, 3, 18])
def test_the_rows_are_those_a_plain_derivation_writes(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(seed)
    fast = RepoGraph()
    fast.set_files(tree)
    got = _rows(fast)
    monkeypatch.setattr(edges, "_resolved", _plain_resolved)
    monkeypatch.setattr(edges, "np", _TwoKeys(len(tree)))
    plain = RepoGraph()
    plain.set_files(tree)
    assert got == _rows(plain)
    assert len(got[1]) > len(tree)  # a graph with edges, resolved ones among them
