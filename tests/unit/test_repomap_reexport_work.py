"""The first map of a tree whose packages re-export their modules (core.repomap.links): each
import is resolved once per derivation, however many files reach a package through its
`__init__.py`, and the graph's rows stay what they were.

On SQLAlchemy's sdist (678 files), every file importing `sqlalchemy` or `..util` resolved the
package's `__init__.py` imports again: 349,509 resolutions for 636 files, 1.1 s of the first
map's `context/assemble` (issue 18, stall_assemble). The rows' golden file was recorded on the
tree before resolutions were shared (main bd2379a)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from tokend.core.repomap import imports
from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.tags import Definition, FileTags

GOLDEN = Path(__file__).parent / "data" / "repomap_reexport_rows.json"
PACKAGES, MODULES = 6, 12


def _tree() -> dict[str, FileTags]:
    """src/app: PACKAGES packages of MODULES modules each; every package's `__init__.py`
    re-exports its modules' names (relative imports); every module imports other packages
    (absolute and relative) and its neighbours, and refers to names they define."""
    draw = random.Random(18)
    tree: dict[str, FileTags] = {"src/app/__init__.py": FileTags(
        imports=tuple(f".pkg{p}" for p in range(PACKAGES)))}  # fmt: skip
    for p in range(PACKAGES):
        names = [f"Name{p}_{m}" for m in range(MODULES)]
        tree[f"src/app/pkg{p}/__init__.py"] = FileTags(
            definitions=tuple(Definition(n, i, "") for i, n in enumerate(names)),
            imports=tuple(f".mod{m}" for m in range(MODULES)),
        )
        for m in range(MODULES):
            others = draw.sample(range(PACKAGES), 3)
            specs = [f"app.pkg{others[0]}", f"..pkg{others[1]}", f".mod{(m + 1) % MODULES}"]
            specs += [f"app.pkg{others[2]}.mod{draw.randrange(MODULES)}", "os.path"]
            refs = {f"Name{o}_{draw.randrange(MODULES)}": draw.randint(1, 5) for o in others}
            refs[f"Name{p}_{(m + 1) % MODULES}"] = 2
            tree[f"src/app/pkg{p}/mod{m}.py"] = FileTags(
                definitions=(Definition(f"Name{p}_{m}", 3, ""), Definition(f"helper{m}", 9, "")),
                references=refs,
                imports=tuple(sorted(specs)),
            )
    return tree


def _rows(graph: RepoGraph) -> dict[str, list[float]]:
    edges = graph.edges()
    return {
        "offsets": edges.offsets.tolist(),
        "targets": edges.targets.tolist(),
        "weights": edges.weights.tolist(),
    }


def test_the_graphs_rows_are_those_of_the_tree_before():
    graph = RepoGraph()
    graph.set_files(_tree())
    golden = json.loads(GOLDEN.read_text())
    got = _rows(graph)
    assert got["offsets"] == golden["offsets"]
    assert got["targets"] == golden["targets"]
    assert np.array_equal(np.array(got["weights"]), np.array(golden["weights"]))


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Each (file, import) resolved from now on."""
    found: list[tuple[str, str]] = []
    real = imports._resolve

    def counted(path: str, spec: str, index: imports.PathIndex) -> tuple[str, ...]:
        found.append((path, spec))
        return real(path, spec, index)

    monkeypatch.setattr(imports, "_resolve", counted)
    return found


def test_each_import_is_resolved_once_per_derivation(resolved: list[tuple[str, str]]):
    tree = _tree()
    graph = RepoGraph()
    graph.set_files(tree)
    graph.edges()
    specs = sum(len(t.imports) for t in tree.values())
    # Each (file, import) at most once: before, every module resolved its three packages'
    # re-exports again (MODULES specs each): 2,676 resolutions of 438 imports.
    assert len(resolved) == len(set(resolved)) <= specs


def test_an_absolute_import_is_resolved_once_whatever_folder_imports_it(
    resolved: list[tuple[str, str]],
):
    """What an absolute import names hangs on its language alone (issue 18: SQLAlchemy's
    first map resolved `sqlalchemy`, `typing` ... again in each of its folders: 9,181
    resolutions where 5,575 answer the same)."""
    tree = _tree()
    graph = RepoGraph()
    graph.set_files(tree)
    graph.edges()
    absolute = [spec for _, spec in resolved if not spec.startswith(".")]
    assert len({p.rsplit("/", 1)[0] for p, t in tree.items() if "os.path" in t.imports}) > 1
    assert sorted(absolute) == sorted(set(absolute))  # main: once in each folder
    relative = [(p.rsplit("/", 1)[0], spec) for p, spec in resolved if spec.startswith(".")]
    assert sorted(relative) == sorted(set(relative))  # still once per folder


if __name__ == "__main__":  # record the golden rows (on the tree before the change)
    graph = RepoGraph()
    graph.set_files(_tree())
    GOLDEN.write_text(json.dumps(_rows(graph)) + "\n")
