"""Issue 24's twelfth pass: the causes the eleventh found, tried as changes of the file rank on
the twenty-four tuning trees (bench.repomap_refit's groups), in bench.repomap_fit_file's way (each
query's signal arrays kept by pin; recall at 1 / 3 / 5 / 10 of the ranked files, no map rendered).

- A hub file leading `lexical` for unrelated texts (rclone's generator, mikro-orm's
  `typings.ts`): a text query's `lexical` divided by a prior of the file, (x / mean x) ** a, for
  x its BM25 length (names and words, core.repomap.rank.lengths), its names alone, the files
  whose references reach it (the graph's in-edges) or its definitions; and `peak`, each file's
  largest single BM25 term of the text (a file that says one of the text's rare words much, not
  many of its words a little), as a signal of its own or `lexical` over its terms ** a.
- A file focus's namesakes in other packages first (drizzle-orm): `package`, 1 for the files
  under the focus file's package root (the nearest folder up holding a pyproject.toml, setup.py,
  setup.cfg, package.json, go.mod or Cargo.toml), as a signal; or `stem` kept for the namesakes
  of the focus's own package and multiplied by f for the others.

Each row is main 1db3331's fusion (bench.repomap_refit.MAIN) with one change; `up / down`: the trees
whose mean of R@1..10 rises / falls.
"""

from __future__ import annotations

import os
import pickle
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from bench.repomap_fit_file import Candidate, Prepared, file_cases, mean_recall, paths_of
from bench.repomap_refit import MAIN, index_of, tuning_groups

Array = Any
MANIFESTS = frozenset({"pyproject.toml", "setup.py", "setup.cfg", "package.json", "go.mod",
                       "Cargo.toml"})  # fmt: skip
Change = Callable[[dict[str, Array], dict[str, Any]], None]


def file_stats(repo: str) -> dict[str, Any]:
    """Per file (the index's rows) its BM25 lengths, in-edges and definitions; per text query
    (bench.repomap_eval's order) each file's largest BM25 term and its count of terms."""
    kept = data.OUT / f"priors-{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    if kept.exists():
        with kept.open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
    from tokend.core.repomap import rank
    from tokend.core.repomap.graph import Focus, identifiers_in
    from tokend.core.repomap.said import query_ids

    g, jobs = index_of(repo)
    t, terms = g.table, g._paths_terms()
    with_words, names = rank.lengths(t, terms, g.words.lengths())
    edges = g.edges()
    out: dict[str, Any] = {
        "paths": list(t.paths), "with_words": with_words, "names": names,
        "in_edges": np.bincount(edges.targets, minlength=len(t.paths)).astype(float),
        "definitions": np.diff(t.d_off).astype(float), "peak": [], "terms": [],
    }  # fmt: skip
    for job in jobs:
        if job["kind"] != "task":
            continue
        focus = Focus(frozenset(), identifiers_in(job["text"], g.defines), job["text"])
        ids = query_ids(g.words, g.signals, [], focus.text)
        peak, count = _peak(g, rank, rank.query(t, [], focus.text), with_words, ids)
        out["peak"].append(peak)
        out["terms"].append(count)
    with kept.open("wb") as f:
        pickle.dump(out, f)
    return out


def _peak(g: Any, rank: Any, query: Array, length: Array, ids: Array | None) -> tuple[Array, Array]:
    """core.repomap.rank.lexical's terms, each file's largest and their count (not their sum)."""
    n = len(g.table.paths)
    peak, count = np.zeros(n), np.zeros(n)
    norm = rank.K1 * (1 - rank.B + rank.B * length / max(float(length.mean()), 1.0))
    parts = rank._name_terms(g.table, g._paths_terms(), query)
    df = np.zeros(len(query), dtype=np.int64)
    for _, place, _ in parts:
        df += np.bincount(place, minlength=len(query))
    blocks = [(rows, df[place], tf) for rows, place, tf in parts]
    if ids is not None and len(ids):
        word_df = g.words.document_counts(ids)
        blocks += [(rows, word_df[hit], tf) for rows, hit, tf in g.words.hits(ids)]
    for rows, term_df, tf in blocks:
        np.maximum.at(peak, rows, rank.bm25(n, term_df, tf, norm[rows]))
        np.add.at(count, rows, 1.0)
    return peak, count


def package_of(repo: str, paths: list[str]) -> Array:
    """Each path's package root (the nearest folder up with a manifest), as a number."""
    tree = data.tree(repo)
    roots = set()
    for folder, subfolders, names in os.walk(tree):
        subfolders[:] = sorted(d for d in subfolders if d not in ("node_modules", ".git"))
        if MANIFESTS & set(names):
            rel = os.path.relpath(folder, tree)
            roots.add("" if rel == "." else rel)
    found = []
    for path in paths:
        parts = path.split("/")[:-1]
        up = (i for i in range(len(parts), -1, -1) if "/".join(parts[:i]) in roots)
        found.append(next(("/".join(parts[:i]) for i in up), "-"))
    names = {r: i for i, r in enumerate(sorted(set(found)))}
    return np.array([names[r] for r in found])


def _cases(kind: str) -> dict[str, list[tuple[dict[str, Array], list[int], list[int]]]]:
    """The kept arrays of every tuning tree's `kind` queries, with the stats of this bench."""
    out = {}
    for repo in [r for part in tuning_groups() for r in part]:
        stats, cases = file_stats(repo), file_cases(repo, kind)
        assert stats["paths"] == paths_of(repo), repo  # the same rows
        package = package_of(repo, stats["paths"])
        for i, (scores, _rows, _) in enumerate(cases):
            scores["_stats"] = stats
            scores["_package"] = package
            if kind == "task":
                scores["_peak"], scores["_terms"] = stats["peak"][i], stats["terms"][i]
        out[repo] = cases
    return out


def _measure(cases: dict[str, Any], cand: Candidate, change: Change | None) -> dict[str, float]:
    """Each tree's mean of R@1..10 with `change` made to each query's scores."""
    prepared = {}
    for repo, got in cases.items():
        changed = []
        for scores, rows, targets in got:
            s = {k: v for k, v in scores.items() if not k.startswith("_")}
            if change is not None:
                change(s, {**scores, "rows": rows})
            changed.append((s, rows, targets))
        prepared[repo] = [Prepared(c) for c in changed]
    return {r: statistics.mean(mean_recall(prepared, [r], cand)) for r in cases}


def _row(name: str, per: dict[str, float], base: dict[str, float] | None) -> str:
    parts = [statistics.mean(per[r] for r in p) for p in tuning_groups()]
    moved = "-"
    if base is not None:
        up = sum(per[r] > base[r] + 1e-9 for r in per)
        moved = f"{up} / {sum(per[r] < base[r] - 1e-9 for r in per)}"
    groups = " / ".join(f"{m:.4f}" for m in parts)
    return f"| {name} | {statistics.mean(per.values()):.4f} | {groups} | {moved} |"


def _prior(name: str, a: float) -> Change:
    def change(s: dict[str, Array], c: dict[str, Any]) -> None:
        x = c["_stats"][name] + 1.0
        s["lexical"] = s["lexical"] / (x / max(float(x.mean()), 1.0)) ** a

    return change


def _over_terms(a: float) -> Change:
    def change(s: dict[str, Array], c: dict[str, Any]) -> None:
        s["lexical"] = s["lexical"] / np.maximum(c["_terms"], 1.0) ** a

    return change


def _other_stem(f: float) -> Change:
    def change(s: dict[str, Array], c: dict[str, Any]) -> None:
        same = np.isin(c["_package"], c["_package"][c["rows"]])
        s["stem"] = np.where(same, s["stem"], s["stem"] * f)

    return change


def _with(name: str, key: str) -> Change:
    def change(s: dict[str, Array], c: dict[str, Any]) -> None:
        s[name] = c[key] if key != "_package" else np.isin(
            c["_package"], c["_package"][c["rows"]]).astype(float)  # fmt: skip

    return change


def run() -> str:
    """Each change from main 1db3331's fusions (bench.repomap_refit.MAIN; a text's `compounds`
    came after these were measured)."""
    head = ("| change (one at a time) | mean R@1..10 | groups (first six / 8th / 9th / 10th / "
            "11th / 12th) | trees up / down |\n|---|---:|---:|---:|")  # fmt: skip
    lines = ["#### repomap_priors: the eleventh pass's causes, tried on the tuning trees\n"]
    for kind in ("task", "file"):
        cases = _cases(kind)
        now: Candidate = MAIN[kind]
        base = _measure(cases, now, None)
        rows = [_row("main 1db3331's fusion", base, None)]
        tried: list[tuple[str, Candidate, Change | None]] = []
        if kind == "task":
            for name in ("with_words", "names", "in_edges", "definitions"):
                tried += [(f"lexical / ({name}) ** {a:g}", now, _prior(name, a))
                          for a in (-0.1, 0.05, 0.1, 0.2)]  # fmt: skip
            tried += [(f"+ peak, weight {w:g}", ({**now[0], "peak": w}, now[1], now[2]),
                       _with("peak", "_peak")) for w in (0.25, 0.5, 1.0)]  # fmt: skip
            tried += [(f"+ peak, scaled {w:g}", (now[0], now[1], {**now[2], "peak": w}),
                       _with("peak", "_peak")) for w in (0.25, 0.5, 1.0)]  # fmt: skip
            tried += [(f"lexical / its terms ** {a:g}", now, _over_terms(a)) for a in (0.1, 0.25)]
        else:
            tried += [(f"+ package, weight {w:g}", ({**now[0], "package": w}, now[1], now[2]),
                       _with("package", "_package")) for w in (0.25, 0.5, 1.0)]  # fmt: skip
            tried += [(f"+ package, scaled {w:g}", (now[0], now[1], {**now[2], "package": w}),
                       _with("package", "_package")) for w in (0.01, 0.05, 0.1)]  # fmt: skip
            tried += [(f"stem of other packages' files x {f:g}", now, _other_stem(f))
                      for f in (0.0, 0.25, 0.5, 0.75)]  # fmt: skip
        rows += [_row(name, _measure(cases, cand, change), base) for name, cand, change in tried]
        lines += [f"\n**{kind} queries**\n", head, *rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
