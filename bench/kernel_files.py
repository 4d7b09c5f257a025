"""Where a tag worker's CPU goes over every file the kernel's first map parses, per file (issue 22:
the first map's tags are CPU-bound on both cores, so only a cheaper parse makes it faster).

In a fresh interpreter of this tree's code, every file of the tree with a tag language (not a
symlink, at most 1 MiB, no NUL in its first 8,000 bytes: what the file index reads for the map) is
taken through a tag worker's stages one after the other, each timed in CPU seconds of the process
(time.process_time_ns): reading it (a plain open and read, not the daemon's walk from the root),
tree-sitter's parse, the tags query's captures, the captures walked into names, lines and counted
references (adapters.tags.parser, the worker's own code), the encoding (adapters.tag_wire.
wire_fields: the JSON text and the packed keys) and the answer's pickle. No words (the first
build's pass is tags only), nor, where the tree's code leaves them out, its names' words. CPU
seconds do not depend on the machine's load as seconds do.

The report: the stages' totals; the folders that cost most, with each stage and the CPU per MB;
and the bounds of skipping tree-sitter for some files: files that yield no tag at all, and files
that yield no reference (a file of `#define` lines: its definitions still need keys and a parse or
a scanner of its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.kernel import kernel_tree

ROOT = Path(__file__).resolve().parents[1]
TOP = 16  # folders shown
_SCRIPT = r"""
import json, os, pickle, sys, time
from tokend.adapters import tag_wire
from tokend.adapters.tags.parser import _load, _raw, _references, _specs
from tokend.core.workspace.fileclass import language_of
import tree_sitter
tree = sys.argv[1]
clock = time.process_time_ns
parsers = {}
rows = []
for folder, dirs, names in os.walk(tree):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(folder, name)
        language = language_of(path)
        if language is None or os.path.islink(path) or os.path.getsize(path) > (1 << 20):
            continue
        t0 = clock()
        with open(path, "rb") as f:
            source = f.read()
        if b"\0" in source[:8000]:
            continue
        t1 = clock()
        grammar, query = _load(language)
        parser = parsers.get(language) or parsers.setdefault(language, tree_sitter.Parser(grammar))
        parsed = parser.parse(source)
        t2 = clock()
        captures = tree_sitter.QueryCursor(query).captures(parsed.root_node)
        t3 = clock()
        named, starts = [], set()
        for node in captures.get("def", ()):
            start = node.start_byte
            raw = source[start : node.end_byte]
            if raw:
                named.append((raw.decode("utf-8", "replace"), node.start_point[0]))
                starts.add(start)
        references = _references(source, captures.get("ref", ()), starts)
        imports = sorted({s for n in captures.get("import", ()) for s in _specs(n)})
        raw_tags = _raw(named, references, tuple(imports), source, False)
        t4 = clock()
        try:  # (no words of the names either, where the tree's first build makes them later)
            text, packed = tag_wire.wire_fields(raw_tags, False)
        except TypeError:
            text, packed = tag_wire.wire_fields(raw_tags)
        t5 = clock()
        pickle.dumps((0, text, packed, False), protocol=pickle.HIGHEST_PROTOCOL)
        t6 = clock()
        rows.append((os.path.relpath(path, tree), len(source), t1 - t0, t2 - t1, t3 - t2,
                     t4 - t3, t5 - t4, t6 - t5, len(raw_tags[0]), len(raw_tags[1])))
print(json.dumps(rows))
"""
STAGES = ["read", "parse", "query", "walk", "encode", "pickle"]
LABELS = {
    "read": "reading the file (a plain open and read)",
    "parse": "tree-sitter's parse",
    "query": "the tags query's captures",
    "walk": "the captures walked: names, lines, references counted",
    "encode": "the encoding: the JSON text and the packed keys",
    "pickle": "the answer's pickle",
}


def script_json(script: str, server: Path, tree: Path) -> Any:
    """What `script` prints as JSON, run on `tree` by a fresh interpreter importing the tokend
    package from `server` (a code's own tree: this one's or a baseline's)."""
    env = {**os.environ, "PYTHONPATH": str(server)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tree)],
        env=env, capture_output=True, text=True, check=True, timeout=3600,
    )  # fmt: skip
    return json.loads(done.stdout)


def profile(server: Path, tree: Path) -> list[list[Any]]:
    return list(script_json(_SCRIPT, server, tree))


def folder_of(path: str) -> str:
    """A row's group: the register headers apart, drivers/ and arch/ by their next folder."""
    if "/asic_reg/" in path:
        return "drivers/gpu/drm/amd/include/asic_reg"
    parts = path.split("/")
    if len(parts) > 2 and parts[0] in ("drivers", "arch"):
        return "/".join(parts[:2])
    return parts[0] if len(parts) > 1 else "(top)"


def _sums(rows: list[list[Any]]) -> dict[str, float]:
    out = {s: sum(r[2 + i] for r in rows) / 1e9 for i, s in enumerate(STAGES)}
    out["files"], out["mb"] = len(rows), sum(r[1] for r in rows) / 1e6
    return out


def report(rows: list[list[Any]]) -> str:
    total = _sums(rows)
    cpu = sum(total[s] for s in STAGES)
    out = [
        "### kernel_files: a tag worker's CPU per stage over every file the first map parses "
        "(bench/kernel_files.py)\n",
        f"{total['files']:,} files, {total['mb']:.1f} MB, in process, CPU s (the tags only, "
        "no words):\n",
        "| stage | CPU s | share |",
        "|---|---:|---:|",
    ]
    out += [f"| {LABELS[s]} | {total[s]:.1f} | {total[s] / cpu:.1%} |" for s in STAGES]
    out.append(f"| all | {cpu:.1f} | |")
    groups: dict[str, list[list[Any]]] = {}
    for row in rows:
        groups.setdefault(folder_of(row[0]), []).append(row)
    ranked = sorted(groups.items(), key=lambda kv: -sum(sum(r[2:8]) for r in kv[1]))
    out += [
        f"\nThe {TOP} folders that cost most, CPU s:\n",
        "| folder | files | MB | " + " | ".join(STAGES) + " | all | CPU s / MB |",
        "|---|---:|---:|" + "---:|" * (len(STAGES) + 2),
    ]
    for name, members in ranked[:TOP]:
        s = _sums(members)
        own = sum(s[k] for k in STAGES)
        cells = " | ".join(f"{s[k]:.2f}" for k in STAGES)
        out.append(
            f"| {name} | {s['files']:,} | {s['mb']:.1f} | {cells} | {own:.2f} | "
            f"{own / max(s['mb'], 1e-9):.3f} |"
        )
    for label, chosen in (
        ("no tag at all (no definition, no reference)", [r for r in rows if not r[8] + r[9]]),
        ("no reference (definitions only: `#define` headers)", [r for r in rows if not r[9]]),
    ):
        s = _sums(chosen)
        out.append(
            f"\nFiles with {label}: {s['files']:,} ({s['mb']:.1f} MB, "
            f"{sum(r[8] for r in chosen):,} definitions): parse {s['parse']:.2f}, query "
            f"{s['query']:.2f}, walk {s['walk']:.2f}, encoding {s['encode']:.2f} CPU s."
        )
    return "\n".join(out)


def run() -> str:
    return report(profile(ROOT / "server", kernel_tree()))


if __name__ == "__main__":
    print(run())
