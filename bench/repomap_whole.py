"""Issue 24's sixteenth pass: a text's `whole` signal as core keeps it (core.repomap.whole: each
file's whole tokens counted with its words, its path's added, its length its kept counts, each
at most 255; every token on a tree of up to LARGE_TREE files, none on a larger one) beside the
BM25 baseline's own score and beside cuts to each file's most frequent, and what a table costs.

`python -m bench.repomap_whole recall [CUT ...]`: on the tuning trees' kept text arrays
(bench.repomap_fit_file's fittask-*.pkl: the arrays of main's signals; the vendored share is
not modelled), the mean of R@1..10 of main's text fusion, and of it with `whole` by its own
reciprocal rank (core.repomap.fusion.TEXT_FUSION's weight and K): the baseline's own score,
core's (every token: these trees are small), and each file's tokens cut to its CUT most frequent
(default 32, 64, 128, 256: what a large tree could afford, measured; not built);
each group's mean (bench.repomap_refit.tuning_groups), and the table's entries a file.

`python -m bench.repomap_whole search`: `whole`'s weight (WEIGHTS) and K (KS_TRIED) beside
main's text fusion, core's arrays; a pair kept when it raises the mean and lowers no group.

`python -m bench.repomap_whole kernel`: the kernel tree's files of a language tokend tags (at
most 1 MiB each, bench.kernel's tree), each counted (core.repomap.text.count_words, uncut), and
the table's entries and bytes (5 an entry, 8 a row's offset) at each cut.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from bench.repomap_fit_file import KS, Prepared, file_cases, paths_of
from bench.repomap_refit import tuning_groups, with_compounds

CUTS = (32, 64, 128, 256)
EVERY = 1 << 30  # (no cut: core's rule on a tree of up to LARGE_TREE files)
MAIN = (  # main bce5b30's text fusion (core.repomap.fusion.TEXT_FUSION but `whole`)
    {"lexical": 1.0, "near": 0.5, "said": 0.5, "compounds": 2.0},
    16.0,
    {"lexical": 1.0, "said": 0.5, "near": 0.25, "compounds": 0.05},
)
WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)  # `whole`'s weight and K searched (REPOMAP_WHOLE_SEARCH)
KS_TRIED = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)


def _uncut(source: bytes) -> dict[int, int]:
    """A file's whole tokens, every one (first said first), by id."""
    from tokend.core.repomap import text
    from tokend.core.repomap.words import sections

    return dict(sections(text.count_words(source))[1])  # (at most WHOLE_MAX, as sent)


def _tables(repo: str, cuts: tuple[int, ...]) -> tuple[dict[int, Any], float]:
    """The repository's whole tables by cut (rows: the fit's paths), and the mean tokens a file
    uncut."""
    from tokend.core.repomap.whole import with_path
    from tokend.core.repomap.words import WordTable

    paths, tree = paths_of(repo), data.tree(repo)
    uncut = []
    for path in paths:
        try:
            uncut.append(_uncut((tree / path).read_bytes()))
        except OSError:
            uncut.append({})
    tables = {}
    for most in (EVERY, *cuts):
        table = WordTable()
        spoken = {p: cut(with_path(u, p), most) for p, u in zip(paths, uncut, strict=True)}
        new = table.changed(dict.fromkeys(paths), spoken)
        table.apply(None, {i: new[p] for i, p in enumerate(paths) if p in new}, len(paths))
        tables[most] = table
    return tables, statistics.mean(len(u) for u in uncut) if uncut else 0.0


def cut(tokens: Any, most: int) -> Any:
    """A file's `most` most frequent tokens (ties: the smaller id): the cut measured."""
    from tokend.core.repomap.words import SaidArrays

    if len(tokens) <= most:
        return tokens
    if isinstance(tokens, SaidArrays):
        ids, counts = tokens.ids, tokens.counts
    else:
        ids = np.fromiter(tokens, np.uint32, len(tokens))
        counts = np.fromiter(tokens.values(), np.uint32, len(tokens))
    keep = np.lexsort((ids, -counts.astype(np.int64)))[:most]
    return SaidArrays.of(ids[keep], counts[keep])


def _texts(repo: str) -> list[str]:
    """The text queries' texts, in the kept arrays' order (bench.repomap_eval's jobs)."""
    from bench.repomap_eval import _jobs
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules

    tree = data.tree(repo)
    walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
    files = sorted(f for f in walked if data._is_source(f))
    jobs = _jobs(tree, data.queries(repo, set(files)), files)
    return [j["text"] for j in jobs if j["kind"] == "task"]


def _main(p: Prepared) -> Any:
    """Each file's score by main's text fusion."""
    weights, k, scaled = MAIN
    total = np.zeros(p.n)
    for name in sorted(set(weights) | set(scaled)):
        if name in p.rank:
            total += np.where(p.has[name], weights.get(name, 0.0) / (k + p.rank[name]), 0.0)
            total += scaled.get(name, 0.0) * p.over[name]
    return total


def _recall(
    p: Prepared, extra: Any | None, base: Any = None, at: tuple[float, float] | None = None
) -> list[float]:
    """Prepared.recall of main's text fusion (`base`: its scores, worked out already), with
    `extra` (a score array) by its own reciprocal rank (`at`: weight and K; core's if None)."""
    from tokend.core.repomap.fusion import TEXT_FUSION, ranks

    total = _main(p) if base is None else base
    if extra is not None:
        weight, k = at or (TEXT_FUSION.weights["whole"], TEXT_FUSION.own_k["whole"])
        total = total + np.where(extra > 0, weight / (k + ranks(extra)), 0.0)
    total = np.round(total, 12)
    order = np.lexsort((np.arange(p.n), -p.graph, -total))[:10]
    return [len(set(order[:x].tolist()) & p.targets) / len(p.targets) for x in KS]


def recall(cuts: tuple[int, ...]) -> str:
    from tokend.core.repomap.whole import whole_scores

    groups = tuning_groups()
    sides = ["main", "baseline's score", "core", *(f"cut {c}" for c in cuts)]
    per: dict[str, dict[str, float]] = {s: {} for s in sides}
    per_k: dict[str, list[list[float]]] = {s: [] for s in sides}
    sizes = []
    for repo in [r for g in groups for r in g]:
        cases = with_compounds(repo, file_cases(repo, "task"))
        tables, tokens = _tables(repo, cuts)
        texts = _texts(repo)
        kept = {c: float(np.diff(t.offsets).mean()) for c, t in tables.items() if c != EVERY}
        sizes.append((repo, tokens, kept))
        got: dict[str, list[list[float]]] = {s: [] for s in sides}
        for case, text in zip(cases, texts, strict=True):
            p = Prepared(case)
            n = p.n
            got["main"].append(_recall(p, None))
            got["baseline's score"].append(_recall(p, case[0]["whole"]))
            got["core"].append(_recall(p, whole_scores(tables[EVERY], n, text)))
            for c in cuts:
                got[f"cut {c}"].append(_recall(p, whole_scores(tables[c], n, text)))
        for s in sides:
            mean_k = [statistics.mean(g[i] for g in got[s]) for i in range(len(KS))]
            per_k[s].append(mean_k)
            per[s][repo] = statistics.mean(mean_k)
        print(repo, {s: round(per[s][repo], 4) for s in sides}, file=sys.stderr, flush=True)
    lines = ["| side | R@1 | R@3 | R@5 | R@10 | mean R@1..10 | groups down of "
             f"{len(groups)} | group means |", "|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    main_groups = [statistics.mean(per["main"][r] for r in g) for g in groups]
    for s in sides:
        ks = [statistics.mean(m[i] for m in per_k[s]) for i in range(len(KS))]
        means = [statistics.mean(per[s][r] for r in g) for g in groups]
        down = sum(m < b - 1e-12 for m, b in zip(means, main_groups, strict=True))
        lines.append(f"| {s} | " + " | ".join(f"{x:.3f}" for x in ks)
                     + f" | {statistics.mean(per[s].values()):.4f} | {down} | "
                     + ", ".join(f"{m:.4f}" for m in means) + " |")  # fmt: skip
    lines.append("")
    lines.append(
        "| tree | whole tokens a file (uncut) | " + " | ".join(f"kept at {c}" for c in cuts) + " |"
    )
    lines.append("|---|---:|" + "---:|" * len(cuts))
    for repo, tokens, kept in sizes:
        lines.append(
            f"| {repo} | {tokens:.1f} | " + " | ".join(f"{kept[c]:.1f}" for c in cuts) + " |"
        )
    return "\n".join(lines)


def search() -> str:
    """`whole`'s weight and K (core's arrays: every token), each pair's mean of R@1..10 and how
    many groups it lowers from main's."""
    from tokend.core.repomap.whole import whole_scores

    groups = tuning_groups()
    kept: dict[str, list[tuple[Prepared, Any, Any]]] = {}
    for repo in [r for g in groups for r in g]:
        cases = with_compounds(repo, file_cases(repo, "task"))
        tables, _ = _tables(repo, ())
        kept[repo] = [(p, _main(p), whole_scores(tables[EVERY], p.n, text))
                      for case, text in zip(cases, _texts(repo), strict=True)
                      if (p := Prepared(case))]  # fmt: skip

    def score(at: tuple[float, float] | None) -> tuple[float, list[float]]:
        per = {r: statistics.mean(statistics.mean(_recall(p, extra if at else None, base, at))
                                  for p, base, extra in got) for r, got in kept.items()}  # fmt: skip
        return statistics.mean(per.values()), [statistics.mean(per[r] for r in g) for g in groups]

    first, before = score(None)
    lines = [f"main: {first:.4f} (groups {', '.join(f'{g:.4f}' for g in before)})", "",
             "| whole's weight | K | mean R@1..10 | groups down |", "|---:|---:|---:|---:|"]  # fmt: skip
    for weight in WEIGHTS:
        for k in KS_TRIED:
            mean, means = score((weight, k))
            down = sum(m < b - 1e-12 for m, b in zip(means, before, strict=True))
            lines.append(f"| {weight} | {k:g} | {mean:.4f} | {down} |")
    return "\n".join(lines)


def kernel(cuts: tuple[int, ...]) -> str:
    from bench.kernel import kernel_tree
    from tokend.core.workspace.fileclass import language_of

    root = kernel_tree()
    start, sizes, files = time.process_time(), [], 0
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if language_of(name) is None or os.path.getsize(path) > 1 << 20:
                continue
            with open(path, "rb") as f:
                sizes.append(len(_uncut(f.read())))
            files += 1
    spent = time.process_time() - start
    counts = np.array(sizes)
    lines = [f"{files} files, {spent:.1f} CPU s; whole tokens a file uncut: mean "
             f"{counts.mean():.1f}, median {np.median(counts):.0f}", "",
             "| cut | entries | a file | table MiB (5 B an entry, 8 a row) | files over the cut |",
             "|---:|---:|---:|---:|---:|"]  # fmt: skip
    for most in (*cuts, EVERY):
        entries = int(np.minimum(counts, most).sum())
        mib = (entries * 5 + 8 * (files + 1)) / (1 << 20)
        label = "every (at most WHOLE_MAX)" if most == EVERY else str(most)
        lines.append(f"| {label} | {entries:,} | {entries / files:.1f} | {mib:.1f} | "
                     f"{int((counts > most).sum()):,} |")  # fmt: skip
    return "\n".join(lines)


def run() -> str:
    """bench.run's section: the cuts' recall on the tuning trees."""
    return "#### repomap_whole: a text's whole tokens as core keeps them\n\n" + recall(CUTS)


if __name__ == "__main__":
    what, cuts = sys.argv[1], tuple(int(c) for c in sys.argv[2:]) or CUTS
    print(recall(cuts) if what == "recall" else search() if what == "search" else kernel(cuts))
