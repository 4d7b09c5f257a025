"""Incremental edits of a big buffer, and another connection meanwhile (issue 17).

An editor opens an 8.7 MB file of the workspace (its unsaved buffer) and sends EDITS
`textDocument/didChange` notifications, one incremental edit each (random ranges, a few words),
then asks `workspace/fileTokens` for the file (which waits for the buffer's edits: LSP order).
Meanwhile another process sends `budget/snapshot` back to back (bench.fuzz's probe). Measured: the
prober's waits from the first edit to the editor's reply; the time from the first edit to that
reply; whether the buffer's size then is that of the text the edits make (applied here, one
after another, to one string). Today's daemon beside main before this work, in the same run.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree
from bench.daemon import _env, _p, _Processes
from bench.fuzz import MAIN_BEFORE_REV, _connect

EDITS = 100
LINE = "    value = compute(item, limit=10)  # naïve 😀\n"
TEXT_CHARS = 8_700_000
BREAKS = re.compile(r"\r\n|\r|\n")


def _edits(rng: random.Random, lines: int) -> list[tuple[int, int, int, int, str]]:
    out = []
    for _ in range(EDITS):
        line = rng.randrange(lines)
        start, end = rng.randrange(30), rng.randrange(30, 50)
        out.append((line, start, line + rng.randrange(2), end, rng.choice(["x", "", "a b\n", "é"])))
    return out


def _utf16_to_index(line: str, units: int) -> int:
    count = 0
    while count < len(line) and len(line[:count].encode("utf-16-le")) // 2 < units:
        count += 1
    return count


def _reference(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """The edits applied to one string, as LSP says (lines end at CR, LF or CRLF; UTF-16)."""
    for l1, c1, l2, c2, new in edits:
        offsets = []
        for line_no, char in ((l1, c1), (l2, c2)):
            starts = [0] + [m.end() for m in BREAKS.finditer(text, 0)]
            if line_no >= len(starts):
                offsets.append(len(text))
                continue
            begin = starts[line_no]
            found = BREAKS.search(text, begin)
            line = text[begin : found.start() if found else len(text)]
            offsets.append(begin + _utf16_to_index(line, char))
        a, b = min(offsets), max(offsets)
        text = text[:a] + new + text[b:]
    return text


def measure(server_dir: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkfe-"))
    env = {**_env(base), "PYTHONPATH": str(server_dir)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    root = base / "ws"
    root.mkdir()
    (root / "big.py").write_text("x = 1\n")
    text = LINE * (TEXT_CHARS // len(LINE))
    edits = _edits(random.Random(17), text.count("\n"))
    expected = len(_reference(text, edits).encode())
    try:
        procs.daemon(sock)
        editor = _connect(sock)
        editor.request("workspace/fileTokens", {"workspaceUri": root.as_uri()})
        uri = (root / "big.py").as_uri()
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        editor.send(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                                "params": {"textDocument": doc}}).encode())  # fmt: skip
        figures = {"workspaceUri": root.as_uri(), "paths": ["big.py"]}
        editor.request("workspace/fileTokens", figures)  # the buffer is taken
        prober = subprocess.Popen(
            [sys.executable, "-m", "bench.fuzz", "probe", str(sock)],
            cwd=ROOT, env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{server_dir}"},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert prober.stdout is not None and prober.stdin is not None
        prober.stdout.readline()
        time.sleep(1.0)
        began = time.time()
        for version, (l1, c1, l2, c2, new) in enumerate(edits, start=2):
            change = {"range": {"start": {"line": l1, "character": c1},
                                "end": {"line": l2, "character": c2}}, "text": new}  # fmt: skip
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
            editor.send(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange",
                                    "params": params}).encode())  # fmt: skip
        [figure] = editor.request("workspace/fileTokens", figures)["result"]
        taken_s = time.time() - began
        prober.stdin.close()
        probed = json.loads(prober.stdout.readline() or "{}")
        prober.wait()
        waits = [w for w, at in zip(probed["waits"], probed["starts"], strict=False)
                 if began <= at <= began + taken_s]  # fmt: skip
        editor.close()
        return {"waits": waits, "taken_s": taken_s, "right": figure["bytes"] == expected}
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def run() -> str:
    rows = [("tokend", measure(ROOT / "server"))]
    with baseline_tree(MAIN_BEFORE_REV) as tree:
        if tree is not None:
            rows.append((f"main before ({MAIN_BEFORE_REV})", measure(tree / "server")))
    lines = [
        "### Incremental edits of an 8.7 MB buffer (bench/fuzz_edits.py)\n",
        f"An editor opens an {TEXT_CHARS / 1e6:.1f} M-character file as an unsaved buffer, then "
        f"sends {EDITS} `textDocument/didChange` notifications of one incremental edit each and "
        "asks `workspace/fileTokens` for the file (it waits for the edits); another process sends "
        "`budget/snapshot` back to back meanwhile. Right: the buffer's size is that of the text "
        "the edits make, applied one after another to one string here. Same run: today's daemon "
        "and main before this work.\n",
        "| daemon | edits taken in (s) | snapshots meanwhile | p50 / p99 / max wait (ms) | right |",
        "|---|---:|---:|---|---|",
    ]
    for name, r in rows:
        waits = r["waits"] if len(r["waits"]) > 1 else [float("nan")] * 2
        lines.append(
            f"| {name} | {r['taken_s']:.2f} | {len(r['waits']):,} | {_p(waits, 50):.1f} / "
            f"{_p(waits, 99):.1f} / {max(waits):,.1f} | {'yes' if r['right'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
