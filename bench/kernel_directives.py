"""The kernel's files of preprocessor directives only, whose tags the scanner finds without
tree-sitter (adapters/tags/preproc.py): over every .c/.h file of the tree under 1 MiB, how many it
takes, and how many of those it reads differently from tree-sitter (the goal: none). CPU seconds
of this process: the taken files' tags with the scanner and by tree-sitter, and the scanner over
every file (what its refusals cost)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

MAX_BYTES = 1 << 20


def check(tree: Path) -> dict[str, Any]:
    from tokend.adapters.tags import TagParser
    from tokend.adapters.tags import parser as tag_parser
    from tokend.adapters.tags.preproc import scan

    with_scan = TagParser(alone=True)
    real_scan = tag_parser.scan
    f: dict[str, Any] = {"files": 0, "taken": 0, "taken_mb": 0.0, "mismatches": [],
                         "scan_cpu_s": 0.0, "tree_sitter_cpu_s": 0.0, "scanned_cpu_s": 0.0}  # fmt: skip
    for folder, _dirs, names in os.walk(tree):
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, name)
            try:
                source = Path(path).read_bytes()
            except OSError:
                continue
            if len(source) > MAX_BYTES:
                continue
            f["files"] += 1
            started = time.process_time()
            taken = scan(source) is not None
            f["scan_cpu_s"] += time.process_time() - started
            if not taken:
                continue
            f["taken"] += 1
            f["taken_mb"] += len(source) / 1e6
            tag_parser.scan = lambda _source: None  # tree-sitter's own tags: the oracle
            try:
                started = time.process_time()
                want = TagParser(alone=True).tags("c", source)
                f["tree_sitter_cpu_s"] += time.process_time() - started
            finally:
                tag_parser.scan = real_scan
            started = time.process_time()
            got = with_scan.tags("c", source)
            f["scanned_cpu_s"] += time.process_time() - started
            if got != want:
                f["mismatches"].append(os.path.relpath(path, tree))
    return f


def row(f: dict[str, Any]) -> str:
    return (
        f"Files of directives only, tagged without tree-sitter (adapters/tags/preproc.py): "
        f"{f['taken']:,} of the tree's {f['files']:,} .c/.h files under 1 MiB "
        f"({f['taken_mb']:.1f} MB); their tags differ from tree-sitter's in "
        f"**{len(f['mismatches'])}** files{': ' + ', '.join(f['mismatches'][:5]) if f['mismatches'] else ''}. "
        f"CPU in this process: their tags {f['scanned_cpu_s']:.2f} s with the scanner against "
        f"{f['tree_sitter_cpu_s']:.2f} s by tree-sitter (the words of their text counted in "
        f"both); the scanner over all {f['files']:,} files, refusals included, "
        f"{f['scan_cpu_s']:.2f} s."
    )
