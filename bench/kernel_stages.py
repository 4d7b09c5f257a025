"""A tag worker's CPU per stage on the same FILES random kernel .c/.h files (a fixed seed), for
this tree's code and the baseline's, each in a fresh interpreter: the worker's whole loop
(tag_workers.main, run in process on the batch, its pickled answers included), and its stages
through each tree's own functions: the tags (tree-sitter's parse and query, the result walking
and the words), the words alone, the encoding (the JSON text and the packing),
the pickle; and parts of the tags measured alone (tree-sitter's parse, then its query on the
kept trees; the words). CPU seconds of the process (time.process_time), medians of ROUNDS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FILES = 1500
ROUNDS = 3
_SCRIPT = r"""
import io, json, os, pickle, random, statistics, sys, time
from types import SimpleNamespace
from tokend.adapters import tag_wire, tag_workers
from tokend.adapters.tags import TagParser
from tokend.core.repomap.text import count_words
tree, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
paths = sorted(os.path.join(d, n) for d, _, names in os.walk(tree) for n in names
               if n.endswith((".c", ".h")))
random.Random(22).shuffle(paths)
sources = [open(p, "rb").read() for p in paths[:count]]
batch = [(i, "c", s) for i, s in enumerate(sources)]
new = hasattr(tag_wire, "wire_fields")
parser = TagParser(alone=True)
def cpu(fn):
    started = time.process_time(); fn(); return time.process_time() - started
def loop():
    sent = io.BytesIO(); tag_wire.send(sent, batch)
    sys.stdin = SimpleNamespace(buffer=io.BytesIO(sent.getvalue()))
    sys.stdout = SimpleNamespace(buffer=io.BytesIO())
    try:
        tag_workers.main()
    finally:
        sys.stdin, sys.stdout = sys.__stdin__, sys.__stdout__
tag_workers.os.nice = lambda n: 0
tag_workers._watch_parent = lambda pid: None
sys.argv = ["tag_workers", str(1 << 40)]
tags = [parser.raw("c", s) if new else parser.tags("c", s) for s in sources]
encode = ((lambda: [tag_wire.wire_fields(t) for t in tags]) if new else
          (lambda: [(tag_wire.tags_json(t), tag_wire.packed_fields(t)) for t in tags]))
answers = [(0, *encode_one, False) for encode_one in encode()]
import tree_sitter
from tokend.adapters.tags.parser import _load
grammar, query = _load("c")
ts = tree_sitter.Parser(grammar)
trees = [ts.parse(s) for s in sources]
stages = {
    "loop": loop,
    "tags": lambda: [parser.raw("c", s) if new else parser.tags("c", s) for s in sources],
    "words": lambda: [count_words(s) for s in sources],
    "parse": lambda: [ts.parse(s) for s in sources],
    "query": lambda: [tree_sitter.QueryCursor(query).captures(t.root_node) for t in trees],
    "encode": encode,
    "pickle": lambda: [pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL) for a in answers],
}
out = {k: statistics.median(cpu(f) for _ in range(rounds)) for k, f in stages.items()}
out["files"], out["mb"] = len(sources), sum(map(len, sources)) / 1e6
print(json.dumps(out))
"""


def stages(server: Path, tree: Path, files: int = FILES) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(server)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tree), str(files), str(ROUNDS)],
        env=env, capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def rows(ours: dict[str, Any], before: dict[str, Any] | None) -> str:
    names = {
        "loop": "the worker's whole loop (tags, encoding, pickled answers)",
        "tags": "the tags: parse and query, result walking, words",
        "parse": "of which tree-sitter's parse",
        "query": "of which tree-sitter's query",
        "words": "of which the words (core.repomap.text, the same code in both)",
        "encode": "the encoding: the JSON text and the packing",
        "pickle": "the answers' pickle",
    }
    out = [
        f"\n\nA worker's CPU per stage, {ours['files']:,} random .c/.h files "
        f"({ours['mb']:.1f} MB, seed 22), "
        f"in process, median of {ROUNDS}, CPU s:\n",
        "| stage | this tree | before | ratio |",
        "|---|---:|---:|---:|",
    ]
    for key, label in names.items():
        was = before[key] if before else float("nan")
        ratio = f"{ours[key] / was:.2f}" if was >= 0.01 else "-"
        out.append(f"| {label} | {ours[key]:.2f} | {was:.2f} | {ratio} |")
    return "\n".join(out)


def compare(tree: Path, before_rev: str) -> str:
    """The rows, this tree's code beside `before_rev`'s (checked out in a temporary worktree)."""
    from bench.baseline import baseline_tree

    ours = stages(Path(__file__).resolve().parents[1] / "server", tree)
    with baseline_tree(before_rev) as before_tree:
        before = stages(before_tree / "server", tree) if before_tree is not None else None
    return rows(ours, before)
