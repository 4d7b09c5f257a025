"""Does the repo map rank the files that matter first? Co-change in public git histories.

Repositories, pins, commits and the focus of each query: bench.repomap_eval_data (three tuning
repositories, three held out: one each of Python, TypeScript, Go). Two kinds of query per
commit: `file` (the map is focused on one changed file: are the commit's other changed files
shown?) and `task` (the focus is the commit message's text, as an agent's task would be: are the
changed files shown?). Sides, in the same run: Aider 0.86.2's RepoMap (bench.repomap's
virtualenv, offline; its results are kept in bench/out/eval by tree and queries), tokend before
this work (main at BEFORE_REV, in a temporary worktree), tokend now (and one row per signal
left out: REPOMAP_EVAL_ABLATE=1), and the trivial baselines: same folder, import graph, BM25
(for a file focus, the query is that file's words) and co-change (the history tokend reads
alone: the commits before the oldest query that changed a file with the focus). Baselines' maps
are rendered by tokend's renderer: each file's definitions, files in the baseline's order,
fitted to the budget. tokend's index reads the pinned repository's history up to the first
parent of the tree's oldest query (bench.repomap_eval_data.history): no query's own commit.

Figures per repository and side: recall at k files (share of the targets among the first k
files of the ranking, focus files left out), recall within a budget (share of targets whose
path heads a block of the map), maps over budget (o200k_base), median seconds per map call.
Where tokend is behind a side in a cell, the difference's paired 95% interval over the tree's
queries; the run ends with every cell of the trees of 500+ source files tallied, ahead and
behind, and how many beyond the noise (bench.repomap_eval_paired).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import repomap_eval_baselines as trivial
from bench import repomap_eval_data as data
from bench import repomap_eval_paired as paired
from bench import repomap_eval_sides as sides
from bench.baseline import baseline_tree
from bench.ranking import shown_files
from bench.repomap import _aider_python, _env, _litellm_tokenizers

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REV = "5953374"  # main before issue 24's twenty-first pass
KS = (1, 3, 5, 10)
BUDGETS = (1024, 4096)
KINDS = ("file", "task")


def _jobs(tree: Path, queries: list[data.Query], files: list[str]) -> list[dict[str, Any]]:
    out = []
    names = {f.rsplit("/", 1)[-1] for f in files}
    for kind in KINDS:
        for q in queries:
            if kind == "file":
                out.append({"kind": kind, "files": [q.focus], "identifiers": [], "mentioned": [],
                            "targets": list(q.targets)})  # fmt: skip
            else:
                words = sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", q.message)))
                mentioned = sorted(f for f in files if f in q.message or (
                    f.rsplit("/", 1)[-1] in q.message and f.rsplit("/", 1)[-1] in names))  # fmt: skip
                out.append({"kind": kind, "files": [], "identifiers": words, "text": q.message,
                            "mentioned": mentioned, "targets": [q.focus, *q.targets]})  # fmt: skip
    return out


def _run(python: Path, script: str, job: dict[str, Any], env: dict[str, str]) -> Any:
    with tempfile.TemporaryDirectory(prefix="tokend-eval-cwd-") as cwd:  # not the tree: its
        # packages (pydantic's, mypy's) would shadow the installed ones
        done = subprocess.run([str(python), "-c", script], input=json.dumps(job),
                              capture_output=True, text=True, env=env, cwd=cwd, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _aider(tree: Path, files: list[str], jobs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Aider's results, kept by (tree, files, queries): it takes minutes a repository
    (REPOMAP_EVAL_AIDER=kept: None unless an earlier run kept them)."""
    key = hashlib.sha256(json.dumps([str(tree.name), files, jobs]).encode()).hexdigest()[:16]
    kept = data.OUT / f"aider-{tree.name}-{key}.json"
    if kept.exists():
        return json.loads(kept.read_text())  # type: ignore[no-any-return]
    if os.environ.get("REPOMAP_EVAL_AIDER") == "kept":  # only results kept by an earlier run
        return None
    python = _aider_python()
    home = Path(tempfile.mkdtemp(prefix="tokend-eval-home-"))
    env = _env(home)
    env["TIKTOKEN_CACHE_DIR"] = _litellm_tokenizers(python)
    job = {"root": str(tree), "files": files, "budgets": list(BUDGETS), "queries": jobs}
    results = _run(python, sides.AIDER, job, env)
    kept.write_text(json.dumps(results))
    return results  # type: ignore[no-any-return]


def aider_row(quick: bool) -> bool:
    """Whether a run shows Aider's row: always but in a quick run (tokend now and the
    baselines), where REPOMAP_EVAL_AIDER=kept shows the rows an earlier run kept (they cost
    nothing; Aider itself is not run)."""
    return not quick or os.environ.get("REPOMAP_EVAL_AIDER") == "kept"


def _tokend(server: Path, tree: Path, files: list[str], jobs: list[dict[str, Any]],
            signals: dict[str, Any] | None = None, cache: Path | None = None,
            history: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """tokend's results (`cache`: a tags cache the runs of one tree and side share; the map
    calls are timed with the index loaded either way; `history`: the git history its index
    reads, bench.repomap_eval_data.history)."""
    env = dict(os.environ, PYTHONPATH=str(server), PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory(prefix="tokend-eval-") as scratch:
        job = {"root": str(tree), "files": files, "budgets": list(BUDGETS), "queries": jobs,
               "cache": str(cache or Path(scratch) / "cache.sqlite3"), "signals": signals,
               "history": history}  # fmt: skip
        return _run(Path(sys.executable), sides.TOKEND, job, env)  # type: ignore[no-any-return]


def _score(results: list[dict[str, Any]], jobs: list[dict[str, Any]], count: Any) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for kind in KINDS:
        picked = [(r, j) for r, j in zip(results, jobs, strict=True) if j["kind"] == kind]
        if not picked:
            continue
        got: dict[str, Any] = {"each": {}}  # each: a cell's per-query shares (paired tests)
        for k in KS:
            got["each"][f"@{k}"] = [
                len(set(r["ranked"][:k]) & set(j["targets"])) / len(j["targets"]) for r, j in picked
            ]
            got[f"@{k}"] = statistics.mean(got["each"][f"@{k}"])
        over, seconds = 0, []
        for b in BUDGETS:
            shares: list[float] = []
            for r, j in picked:
                text = r["maps"][str(b)] if str(b) in r["maps"] else r["maps"][b]
                shares.append(len(shown_files(text, set(j["targets"]))) / len(j["targets"]))
                over += count(text) > b
                sec = r.get("seconds", {})  # Aider: the first budget's call (it ranks)
                if str(b) in sec or b in sec:
                    seconds.append(sec.get(str(b), sec.get(b)))
            got[f"{b}"] = statistics.mean(shares)
            got["each"][f"{b}"] = shares
        got["over"] = over
        got["maps"] = len(picked) * len(BUDGETS)
        got["seconds"] = statistics.median(seconds) if seconds else None
        rows[kind] = got
    return rows


def _baselines(
    tree: Path, files: list[str], jobs: list[dict[str, Any]], history: list[list[str]]
) -> dict[str, list[list[str]]]:
    """Each trivial baseline's ranking per job; a task's text ranks from the first file it
    mentions (none: by path), as same folder, the import graph and co-change have no text."""
    graph = trivial.import_graph(tree, files)
    bm25 = trivial.BM25(tree, files)
    out: dict[str, list[list[str]]] = {"same folder": [], "import graph": [], "BM25": [],
                                       "co-change": []}  # fmt: skip
    ranked_from = {
        "same folder": lambda f: trivial.same_folder(f, files),
        "import graph": lambda f: trivial.import_ranking(f, files, graph),
        "co-change": lambda f: trivial.cochange_ranking(f, files, history),
    }
    for j in jobs:
        if j["kind"] == "file":
            focus = j["files"][0]
            for name, ranking in ranked_from.items():
                out[name].append(ranking(focus))
            text = (tree / focus).read_text("utf-8", "replace")
            out["BM25"].append(bm25.ranking(text, exclude=focus))
        else:
            out["BM25"].append(bm25.ranking(j["text"]))
            anchor = j["mentioned"][0] if j["mentioned"] else None
            for name, ranking in ranked_from.items():
                out[name].append([anchor, *ranking(anchor)] if anchor else sorted(files))
    return out


def evaluate(repo: str, ablate: bool) -> tuple[dict[str, Any], int, int]:
    from tokend.adapters.tokenizers import load_encoding

    enc = load_encoding("o200k_base")
    count = lambda t: len(enc.encode_ordinary(t))  # noqa: E731
    tree = data.tree(repo)
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules

    walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
    files = sorted(f for f in walked if data._is_source(f))
    queries = data.queries(repo, set(files))
    jobs = _jobs(tree, queries, files)
    history = data.history(repo, queries)
    table: dict[str, Any] = {}
    quick = os.environ.get("REPOMAP_EVAL_QUICK") == "1"  # tokend now and the baselines only
    if aider_row(quick):
        aider = _aider(tree, files, jobs)
        if aider is not None:
            table["Aider"] = _score(aider, jobs, count)
    with contextlib.nullcontext(None) if quick else baseline_tree(BEFORE_REV) as before:
        if before is not None:
            table["tokend (main)"] = _score(
                _tokend(before / "server", tree, files, jobs, history=history)["results"],
                jobs,
                count,
            )
    baselines = _baselines(tree, files, jobs, data.history_commits(repo, history))
    for j in jobs:
        j["others"] = {}
    for i, j in enumerate(jobs):
        j["others"] = {name: rankings[i] for name, rankings in baselines.items()}
    now = _tokend(ROOT / "server", tree, files, jobs, history=history)
    table["tokend"] = _score(now["results"], jobs, count)
    for name in baselines:
        results = [{"ranked": baselines[name][i], "maps": r["others"][name]}
                   for i, r in enumerate(now["results"])]  # fmt: skip
        table[name] = _score(results, jobs, count)
    if ablate:
        from tokend.core.repomap.graph import Signals

        with tempfile.TemporaryDirectory(prefix="tokend-eval-ablate-") as scratch:
            cache = Path(scratch) / "cache.sqlite3"  # the tree's tags parsed once for these runs
            for field in Signals.__dataclass_fields__:
                off = {field: False}
                got = _tokend(ROOT / "server", tree, files, jobs, off, cache, history)["results"]
                table[f"tokend without {field}"] = _score(got, jobs, count)
    return table, len(files), len(queries)


def run() -> str:
    ablate = os.environ.get("REPOMAP_EVAL_ABLATE") == "1"
    wanted = os.environ.get("REPOMAP_EVAL_REPOS")
    repos = [r for r in data.REPOS if not wanted or r in wanted.split(",")]
    lines = [
        "### repomap_eval: does the map rank the files that change together first?\n",
        "Co-change in public git histories (bench.repomap_eval_data: pins, commits, focus). Per "
        f"repository, up to {data.commits()} commits of 2..12 changed source files; `file`: map focused on one "
        "changed file, targets its other changed files; `task`: focus is the commit message's "
        "text, targets all its changed files. R@k: share of targets among the first k ranked "
        "files; R 1,024 / 4,096: share of targets the map of that budget shows; over: maps over "
        "budget (o200k_base); s: median seconds of a map call.\n",
    ]
    tallies: dict[str, paired.Tally] = {}
    large: set[str] = set()
    for repo in repos:
        table, n_files, n_queries = evaluate(repo, ablate)
        before = len(lines)
        if n_files >= 500:
            large.add(repo)
        role = data.REPOS[repo][1]
        lines.append(f"\n**{repo}** @ {data.REPOS[repo][0][:12]} ({role}; {n_files} source files, "
                     f"{n_queries} commits)\n")  # fmt: skip
        lines.append("| side | query | R@1 | R@3 | R@5 | R@10 | R 1,024 | R 4,096 | over | s |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for side, rows in table.items():
            for kind, got in rows.items():
                sec = f"{got['seconds']:.3f}" if got["seconds"] is not None else "-"
                lines.append(
                    f"| {side} | {kind} | " + " | ".join(f"{got[f'@{k}']:.3f}" for k in KS)
                    + f" | {got['1024']:.3f} | {got['4096']:.3f} | {got['over']}/{got['maps']} | {sec} |"
                )  # fmt: skip
        lines += _paired_lines(table, tallies, repo in large)
        print("\n".join(lines[before:]), file=sys.stderr)
    lines.append(f"\nAll {len(large)} trees of 500 source files or more, every cell "
                 "(R@1..10 and both budgets, both kinds), a paired bootstrap of the queries "
                 "(bench.repomap_eval_paired):\n")  # fmt: skip
    lines += [f"- {t.line(side)}" for side, t in tallies.items()]
    return "\n".join(lines) + "\n"


CELLS = {**{f"@{k}": f"R@{k}" for k in KS}, **{f"{b}": f"R {b:,}" for b in BUDGETS}}


def _paired_lines(
    table: dict[str, Any], tallies: dict[str, paired.Tally], large: bool
) -> list[str]:
    """The cells where tokend is behind another side (main before this work too, not an
    ablation), each with its paired interval; each comparison counted in `tallies` (trees of
    500 source files or more: the issue's goal)."""
    out: list[str] = []
    for side, rows in table.items():
        if side == "tokend" or side.startswith("tokend without"):
            continue
        for kind, got in rows.items():
            for cell, label in CELLS.items():
                p = paired.paired(table["tokend"][kind]["each"][cell], got["each"][cell])
                if large:
                    tallies.setdefault(side, paired.Tally()).add(p)
                if p.behind:
                    out.append(paired.behind_line(side, kind, label, p))
    return [""] + out if out else []


if __name__ == "__main__":
    print(run())
