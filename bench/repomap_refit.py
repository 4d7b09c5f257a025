"""Issue 24's eleventh to fifteenth passes: both fusions (a file focus's, a task's text)
refitted on the tuning trees (bench.repomap_eval_data's `tuning` roles: the first six and those
held out in the eighth to fourteenth passes, thirty), in bench.repomap_fit_file's way:
each query's signal arrays kept under bench/out/eval (fitfile-*.pkl, fittask-*.pkl), a candidate
scored on them by recall at 1, 3, 5, 10 of the ranked files, no map rendered.

The search (REPOMAP_REFIT_SEARCH=file or task) moves one weight or K at a time from the current
fusion, a move kept when it raises the mean of R@1..10 over all the tuning trees and over most of
the groups of trees (by the pass that made them tuning trees). `whole` (the BM25
baseline's score over each file's whole text, which core keeps no index of) is searched only
when REPOMAP_REFIT_WHOLE=1: what it would earn, measured, not a fusion core can run.
REPOMAP_FIT_HELD=1 adds the held-out rows of the current fusion (read after the choice).
"""

from __future__ import annotations

import os
import pickle
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import repomap_eval_data as data
from bench.repomap_eval import _jobs
from bench.repomap_fit_file import (
    STEPS,
    Candidate,
    Prepared,
    climb,
    file_cases,
    label,
    mean_recall,
    row,
)

MAIN: dict[str, Candidate] = {  # main 1db3331's fusions (core.repomap.fusion)
    "file": (
        {"lexical": 1.0, "near": 1.0, "said": 1.0, "stem": 0.5},
        16.0,
        {"lexical": 0.005, "said": 0.02, "stem": 0.005},
    ),
    "task": (
        {"lexical": 1.0, "near": 0.5, "said": 0.5},
        16.0,
        {"lexical": 1.0, "said": 0.5, "near": 0.25},
    ),
}
SIGNALS = {
    "file": ("lexical", "said", "near", "folder", "same", "names", "graph", "stem"),
    "task": ("lexical", "said", "near", "names", "graph", "compounds"),
}
# a text's scaled part weighs about as much as its reciprocal ranks (issue 24's ninth pass):
# its steps reach that far
TEXT_STEPS = {"weight": STEPS["weight"], "scaled": (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0)}
ALONE = ("lexical", "said", "whole", "near", "graph", "names", "folder", "stem", "compounds")


def with_compounds(repo: str, cases: list[Any]) -> list[Any]:
    """A text's cases with `compounds` (core.repomap.said), for arrays kept before it was a
    signal: worked out from the tree's index and kept beside them (fitcompounds-*.pkl)."""
    if all("compounds" in scores for scores, _, _ in cases):
        return cases
    kept = data.OUT / f"fitcompounds-{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    if not kept.exists():
        from tokend.core.repomap.said import compound_ids, said_scores

        graph, jobs = index_of(repo)
        n = len(graph.table.paths)
        got = [said_scores(graph.words, n, [], compound_ids(j["text"])) for j in jobs
               if j["kind"] == "task"]  # fmt: skip
        with kept.open("wb") as f:
            pickle.dump(got, f)
    with kept.open("rb") as f:
        arrays = pickle.load(f)
    for (scores, _, _), array in zip(cases, arrays, strict=True):
        scores["compounds"] = array
    return cases


def index_of(repo: str) -> tuple[Any, list[dict[str, Any]]]:
    """The repository's graph at its pin (its tags from the fit's cache) and bench.repomap_eval's
    jobs on it."""
    from tokend.adapters import blas
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules
    from tokend.adapters.workspace_cache import WorkspaceCache
    from tokend.service.app_workspaces import index_ports
    from tokend.service.workspace.index import WorkspaceIndex

    blas.single_threaded()
    tree = data.tree(repo)
    cache = data.OUT / f"ablate-{repo.replace('/', '+')}.sqlite3"
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(Path(cache)), index_ports())
    index.build()
    walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
    files = sorted(f for f in walked if data._is_source(f))
    return index.tags._graph, _jobs(tree, data.queries(repo, set(files)), files)


def tuning_groups() -> list[list[str]]:
    """The tuning trees by the pass that made them tuning trees: the first six, the eighth
    pass's six, then three a pass from the ninth on (bench.repomap_eval_data's order)."""
    tuning = [r for r, (_, role) in data.REPOS.items() if role.startswith("tuning")]
    first = [r for r in tuning if data.REPOS[r][1] == "tuning"]
    was = [r for r in tuning if r not in first]
    return [first, was[:6], *(was[i : i + 3] for i in range(6, len(was), 3))]


def _score(prepared: dict[str, list[Prepared]], parts: list[list[str]],
           cand: Candidate) -> tuple[float, list[float]]:  # fmt: skip
    trees = [r for part in parts for r in part]
    per = {r: statistics.mean(mean_recall(prepared, [r], cand)) for r in trees}
    return statistics.mean(per.values()), [statistics.mean(per[r] for r in p) for p in parts]


def search(prepared: dict[str, list[Prepared]], start: Candidate, signals: tuple[str, ...],
           steps: dict[str, tuple[float, ...]] = STEPS) -> tuple[Candidate, list[str]]:  # fmt: skip
    """One weight (or K) at a time from `start`; a move kept when it raises the mean over all
    the tuning trees and the mean of most of the groups; until no move does."""
    parts = tuning_groups()
    return climb(start, signals, steps, lambda cand: _score(prepared, parts, cand))


def run_kind(kind: str) -> str:
    """One kind's rows (`file` or `task`): each signal alone, main's fusion and the current one,
    by group and tree; the search when REPOMAP_REFIT_SEARCH names the kind."""
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION

    parts = tuning_groups()
    tuning = [r for p in parts for r in p]
    held = [r for r, (_, role) in data.REPOS.items() if role.startswith("held-out")]
    repos = tuning + (held if os.environ.get("REPOMAP_FIT_HELD") == "1" else [])
    cases = {r: file_cases(r, kind) for r in repos}
    if kind == "task":
        cases = {r: with_compounds(r, got) for r, got in cases.items()}
    prepared = {r: [Prepared(c) for c in got] for r, got in cases.items()}
    rule = FILE_FUSION if kind == "file" else TEXT_FUSION
    now: Candidate = (dict(rule.weights), rule.k, dict(rule.scaled))
    lines = [f"**{kind} queries**\n", "| fusion | R@1 | R@3 | R@5 | R@10 |",
             "|---|---:|---:|---:|---:|"]  # fmt: skip
    lines += [row(f"{s} alone", mean_recall(prepared, tuning, ({s: 1.0}, 60.0, {}))) for s in ALONE]
    sides = {"main 1db3331": MAIN[kind], "now": now}
    for name, cand in sides.items():
        lines.append(row(f"{name}: {label(cand)}, tuning mean",
                         mean_recall(prepared, tuning, cand)))  # fmt: skip
    names = (
        "first six",
        "six (8th)",
        "three (9th)",
        "three (10th)",
        "three (11th)",
        "three (12th)",
        "three (13th)",
        "three (14th)",
    )
    for part, group in zip(names, parts, strict=True):
        for name, cand in sides.items():
            lines.append(row(f"{name}: {part}", mean_recall(prepared, group, cand)))
    for r in repos:
        for name, cand in sides.items():
            lines.append(row(f"{name}: {r} ({data.REPOS[r][1]})",
                             mean_recall(prepared, [r], cand)))  # fmt: skip
    search_kind = os.environ.get("REPOMAP_REFIT_SEARCH")
    if search_kind == kind:
        signals = SIGNALS[kind] + (("whole",) if os.environ.get("REPOMAP_REFIT_WHOLE") else ())
        steps = TEXT_STEPS if kind == "task" else STEPS
        _, log = search(prepared, now, signals, steps)
        lines += ["", f"The search from the current {kind} fusion (one weight or K at a time):", ""]
        lines += [f"- {line}" for line in log]
    return "\n".join(lines) + "\n"


def run() -> str:
    """bench.run's section: a text's rows, then a file's."""
    head = "#### repomap_refit: both fusions on the twenty-four tuning trees\n"
    return "\n".join([head, run_kind("task"), run_kind("file")])


if __name__ == "__main__":
    for kind in sys.argv[1:] or ["task", "file"]:
        print(run_kind(kind), flush=True)
