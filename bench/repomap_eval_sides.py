"""The programs bench.repomap_eval runs, each in a process of its own: Aider's RepoMap (in its
own virtualenv) and tokend's (this tree, or main before this work: PYTHONPATH says which).

Both read a job on stdin: the tree, its files, the budgets and the queries (a focus file, or a
task's text: identifiers and file names it mentions), and print one JSON list: per query, the
files in rank order (focus files left out), the map text per budget and the seconds of each
map call. tokend's program also renders maps from other rankings (the trivial baselines) with
its own renderer: each file's definitions in line order, files in the ranking's order, fitted
to the budget.
"""

from __future__ import annotations

AIDER = r"""
import json, sys, time
job = json.load(sys.stdin)
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap
io = InputOutput(yes=True, pretty=False)
model = Model("gpt-4o")
root = job["root"]
files = [root + "/" + p for p in job["files"]]
maps = {b: RepoMap(map_tokens=b, root=root, main_model=model, io=io, map_mul_no_files=1,
                   refresh="always") for b in job["budgets"]}
ranker = maps[job["budgets"][0]]
real = RepoMap.get_ranked_tags
memo = {}
def remembered(self, *args, **kwargs):  # one ranking per query, shared by its calls
    key = repr(args)
    if key not in memo:
        memo.clear()
        memo[key] = real(self, *args, **kwargs)
    return memo[key]
RepoMap.get_ranked_tags = remembered
out = []
for q in job["queries"]:
    chat = [root + "/" + p for p in q["files"]]
    other = [f for f in files if f not in chat]
    idents, fnames = set(q["identifiers"]), set(q["mentioned"])
    texts, seconds = {}, {}
    for b, rm in maps.items():  # the first call ranks (timed whole), the others reuse it
        started = time.perf_counter()
        texts[b] = rm.get_repo_map(chat, other, mentioned_fnames=fnames, mentioned_idents=idents) or ""
        if not seconds:
            seconds[b] = time.perf_counter() - started
    ranked = ranker.get_ranked_tags(chat, other, fnames, idents)
    order = []
    for tag in ranked:
        name = tag[0]
        if name not in order and name not in q["files"]:
            order.append(name)
    out.append({"ranked": order, "maps": texts, "seconds": seconds})
print(json.dumps(out))
"""

TOKEND = r"""
import json, sys, time
from pathlib import Path
job = json.load(sys.stdin)
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus, identifiers_in
from tokend.core.repomap.render import RankedDefinition, fit_map
from tokend.service.workspace.index import WorkspaceIndex
try:  # as the daemon's map requests do (a tree from before it has no such module)
    from tokend.adapters import blas
    blas.single_threaded()
except ImportError:
    pass
enc = load_encoding("o200k_base")
count = lambda t: len(enc.encode_ordinary(t))
root = Path(job["root"])
try:  # the index's adapters, handed in by the composition root (a tree from before: none)
    from tokend.service.app_workspaces import index_ports
    ports = (index_ports(),)
except ImportError:
    ports = ()
if job.get("history") and ports and hasattr(ports[0], "history"):
    # the daemon's reader of the history, of the pinned repository up to its oldest query
    # (the tree itself has no .git: bench.repomap_eval_data.history), read once
    import dataclasses, functools
    from tokend.adapters.git_history import read_history
    reader = functools.partial(read_history, git_dir=Path(job["history"]["git_dir"]),
                               rev=job["history"]["rev"])
    ports = (dataclasses.replace(ports[0], history=reader, history_mark=lambda root: None),)
index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(Path(job["cache"])), *ports)
started = time.perf_counter()
index.build()
built = time.perf_counter() - started
tags = index.tags
graph = tags._graph
if job.get("signals") is not None:
    import tokend.core.repomap.graph as rm
    if hasattr(graph, "use"):
        graph.use(rm.Signals(**job["signals"]))
    else:
        graph.signals = rm.Signals(**job["signals"])
table = graph.table
task_text = "text" in Focus.__dataclass_fields__

def order_of(focus):
    if hasattr(graph, "rank_files"):
        return [p for p, _ in graph.rank_files(focus)]
    seen, order = set(focus.files), []
    for d in graph.rank(focus):
        if d.path not in seen:
            seen.add(d.path)
            order.append(d.path)
    return order + [p for p in graph.paths if p not in seen]

def definitions(paths, limit):
    out = []
    for p in paths:
        row = table.row(p)
        if row is None:
            continue
        lines = sorted(set(table.d_line[table.d_off[row]:table.d_off[row + 1]].tolist()))
        out.extend(RankedDefinition(p, li) for li in lines)
        if len(out) > limit:
            break
    return out

out = []
for q in job["queries"]:
    words = identifiers_in(q["text"], tags.defines) if q.get("text") else q["identifiers"]
    focus = Focus(frozenset(q["files"]), frozenset(words), *([q["text"]] if q.get("text") and task_text else []))
    texts, seconds = {}, {}
    for b in job["budgets"]:
        t0 = time.perf_counter()
        texts[b] = tags.repo_map(focus, b, count, "o200k_base").text
        seconds[b] = time.perf_counter() - t0
    entry = {"ranked": order_of(focus), "maps": texts, "seconds": seconds, "others": {}}
    for name, ranking in q.get("others", {}).items():
        entry["others"][name] = {
            b: fit_map(definitions(ranking, b + 65), b, count, tags._line_reader()).text
            for b in job["budgets"]
        }
    out.append(entry)
print(json.dumps({"build": built, "results": out}))
"""
