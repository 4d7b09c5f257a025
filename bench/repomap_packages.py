"""Issue 24's thirteenth pass: a TypeScript workspace package's name resolved to its folder's
entry, measured on the twenty-four tuning trees (bench.repomap_refit's groups) in
bench.repomap_fit_file's way (each query's signal arrays; recall at 1 / 3 / 5 / 10 of the ranked
files, no map rendered), beside main's resolution in the same run. Not a change of core: the
resolution is this module's, put in core.repomap.imports for its run alone.

core.repomap.imports leaves a bare specifier unresolved (`@vitest/utils`, `drizzle-orm`: a
package of node_modules is not the workspace's). In a monorepo most such imports name a package
of the workspace itself, and the map then sends a reference to every definer of its name. Here
a bare `[@scope/]name[/sub]` names the file `name/src/sub` (an extension added, or its `index`
file), `name/src/index` for the name alone, under whichever folder, when one file alone answers
(`@vitest/utils/error` -> packages/utils/src/error.ts). Only the trees with JavaScript or
TypeScript files can move; their arrays are worked out both ways (bench/out/eval,
fitpkg-main-* and fitpkg-bare-*), the others' are the refit's. Rows: the mean of R@1..10 per
group and tree, main's fusions (core.repomap.fusion) on each side.
"""

from __future__ import annotations

import contextlib
import pickle
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from bench import repomap_eval_data as data
from bench.repomap_fit_file import Prepared, file_cases, mean_recall, paths_of
from bench.repomap_refit import tuning_groups, with_compounds

Array = Any
SIDES = ("main", "bare")


def bare_packages(paths: list[str]) -> dict[str, tuple[str, ...]]:
    """`name/sub` (no extension, no scope) -> the files a bare specifier of it may name: every
    `name/src/sub.ext` of the paths (JavaScript and TypeScript), and `name` for `name/src/index`."""
    from tokend.core.repomap.imports import JS_EXTS

    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(p for p in paths if p.endswith(JS_EXTS)):
        parts = path.rsplit(".", 1)[0].split("/")
        for i in range(1, len(parts) - 1):
            if parts[i] == "src":
                rest = parts[i + 1 :]
                found["/".join([parts[i - 1], *rest])].append(path)
                if rest[-1] == "index":
                    found["/".join([parts[i - 1], *rest[:-1]])].append(path)
    return {k: tuple(v) for k, v in found.items()}


def bare_name(spec: str) -> str:
    """A bare specifier without its scope and a written extension: `name[/sub]`."""
    from tokend.core.repomap.imports import JS_EXTS

    name = spec.split("/", 1)[1] if spec.startswith("@") and "/" in spec else spec
    return name.rsplit(".", 1)[0] if name.endswith(JS_EXTS) else name


@contextlib.contextmanager
def resolving_bare() -> Iterator[None]:
    """core.repomap.imports with bare specifiers resolved as above, for the block."""
    from tokend.core.repomap import imports

    script = imports._script
    known: dict[frozenset[str], dict[str, tuple[str, ...]]] = {}

    def resolve(path: str, spec: str, index: Any) -> tuple[str, ...]:
        if spec.startswith("."):
            return script(path, spec, index)
        table = known.get(index.paths)
        if table is None:
            known.clear()
            table = known[index.paths] = bare_packages(sorted(index.paths))
        found = table.get(bare_name(spec), ())
        return found if len(found) == 1 else ()

    imports._script = resolve
    try:
        yield
    finally:
        imports._script = script


def _scripted(repo: str) -> bool:
    from tokend.core.repomap.imports import JS_EXTS

    return any(p.endswith(JS_EXTS) for p in paths_of(repo))


def side_cases(repo: str, side: str, kind: str) -> list[Any]:
    """The queries' arrays of `repo` with main's resolution or bare packages resolved (kept by
    pin); a tree without scripts: the refit's arrays, either side."""
    from bench.repomap_fit import cases_of
    from tokend.core.repomap.stem import name_terms, stem

    if not _scripted(repo):
        cases = file_cases(repo, kind)
        return with_compounds(repo, cases) if kind == "task" else cases
    slug = f"{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    kept = data.OUT / f"fitpkg-{side}-{kind}-{slug}"
    if not kept.exists():
        with resolving_bare() if side == "bare" else contextlib.nullcontext():
            both = cases_of(repo)
        for name, got in both.items():
            with (data.OUT / f"fitpkg-{side}-{name}-{slug}").open("wb") as f:
                pickle.dump(got, f)
    with kept.open("rb") as f:
        cases: list[Any] = pickle.load(f)
    names = name_terms(paths_of(repo))
    for scores, rows, _ in cases:
        scores["stem"] = stem(*names, rows)
    return cases


def run_kind(kind: str) -> str:
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION

    rule = FILE_FUSION if kind == "file" else TEXT_FUSION
    cand = (dict(rule.weights), rule.k, dict(rule.scaled))
    parts = tuning_groups()
    per: dict[str, dict[str, float]] = {s: {} for s in SIDES}
    for repo in [r for p in parts for r in p]:
        for side in SIDES:
            prepared = {repo: [Prepared(c) for c in side_cases(repo, side, kind)]}
            per[side][repo] = statistics.mean(mean_recall(prepared, [repo], cand))
    lines = [f"**{kind} queries** (mean of R@1..10)\n",
             "| side | tuning mean | groups (first six / 8th / 9th / 10th / 11th / 12th) |",
             "|---|---:|---|"]  # fmt: skip
    for side in SIDES:
        groups = " / ".join(f"{statistics.mean(per[side][r] for r in p):.4f}" for p in parts)
        lines.append(f"| {side} | {statistics.mean(per[side].values()):.4f} | {groups} |")
    moved = [f"{r} {per['main'][r]:.4f} -> {per['bare'][r]:.4f}" for r in per["main"]
             if abs(per["bare"][r] - per["main"][r]) > 1e-9]  # fmt: skip
    lines.append("\nTrees that move: " + ("; ".join(moved) or "none") + "\n")
    return "\n".join(lines)


def run() -> str:
    head = "#### repomap_packages: bare TypeScript package names resolved, on the tuning trees\n"
    return "\n".join([head, run_kind("file"), run_kind("task")])


if __name__ == "__main__":
    print(run() if len(sys.argv) < 2 else run_kind(sys.argv[1]), flush=True)
