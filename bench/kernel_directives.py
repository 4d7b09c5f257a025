"""The C files of preprocessor lines only, tagged without tree-sitter (adapters.tags.directives),
checked against tree-sitter over every C file the kernel's first map parses (issue 22), and
what it saves a tag worker.

In a fresh interpreter of this tree's code, every file of the tree the first map tags as C (not
a symlink, at most 1 MiB, no NUL in its first 8,000 bytes) is offered to the recognizer; each
file it takes is also tagged by tree-sitter (the worker's parser: parse, query, the captures'
walk; no words), and the two tag sets must be equal (definitions with their lines, references,
imports, error). CPU seconds of the process (time.process_time_ns): the recognizer over every
file (what it costs the files it refuses too), tree-sitter's tags of the files it takes, and
the recognizer's tags of them. CPU seconds do not depend on the machine's load as seconds do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.kernel import kernel_tree
from bench.kernel_files import script_json

ROOT = Path(__file__).resolve().parents[1]
_SCRIPT = r"""
import json, os, sys, time
from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser
from tokend.adapters.tags.directives import defined_names
from tokend.core.workspace.fileclass import language_of
tree = sys.argv[1]
clock = time.process_time_ns
tag_parser.defined_names = lambda _source: None  # the worker's parser as it was: tree-sitter's tags
parser = TagParser(alone=True)
parser.raw("c", b"int x;\n", False)  # the grammar loaded before any timing
out = {"files": 0, "mb": 0, "taken": 0, "taken_mb": 0, "definitions": 0, "differing": [],
       "scan_taken": 0, "scan_refused": 0, "parsed": 0}
for folder, dirs, names in os.walk(tree):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(folder, name)
        if language_of(path) != "c" or os.path.islink(path) or os.path.getsize(path) > (1 << 20):
            continue
        with open(path, "rb") as f:
            source = f.read()
        if b"\0" in source[:8000]:
            continue
        out["files"] += 1
        out["mb"] += len(source)
        t0 = clock()
        found = defined_names(source)
        t1 = clock()
        if found is None:
            out["scan_refused"] += t1 - t0
            continue
        out["scan_taken"] += t1 - t0
        mine = (found, {}, (), {}, None)
        t3 = clock()
        theirs = parser.raw("c", source, False)
        t4 = clock()
        out["parsed"] += t4 - t3
        out["taken"] += 1
        out["taken_mb"] += len(source)
        out["definitions"] += len(theirs[0])
        if mine != theirs:
            out["differing"].append(os.path.relpath(path, tree))
print(json.dumps(out))
"""


def measure(server: Path, tree: Path) -> dict[str, Any]:
    return dict(script_json(_SCRIPT, server, tree))


def report(m: dict[str, Any]) -> str:
    s = {k: m[k] / 1e9 for k in ("scan_taken", "scan_refused", "parsed")}
    saved = s["parsed"] - s["scan_taken"] - s["scan_refused"]
    differing = m["differing"]
    return "\n".join([
        "### kernel_directives: C files of preprocessor lines only, without tree-sitter "
        "(bench/kernel_directives.py)\n",
        f"{m['files']:,} C files ({m['mb'] / 1e6:.1f} MB); the recognizer took {m['taken']:,} "
        f"({m['taken_mb'] / 1e6:.1f} MB, {m['definitions']:,} definitions); tags differing "
        f"from tree-sitter's: {len(differing)} {differing[:5] if differing else ''}\n",
        "| CPU s | |",
        "|---|---:|",
        f"| tree-sitter's tags of the files taken (parse, query, walk) | {s['parsed']:.2f} |",
        f"| the recognizer on the files taken (their tags made) | {s['scan_taken']:.2f} |",
        f"| the recognizer on the files it refused | {s['scan_refused']:.2f} |",
        f"| saved | {saved:.2f} |",
    ])  # fmt: skip


def run() -> str:
    return report(measure(ROOT / "server", kernel_tree()))


if __name__ == "__main__":
    print(run())
