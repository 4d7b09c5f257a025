"""What a file says, as the tag workers count it (core.repomap.text.count_words), on the kernel:
the CPU it takes and the word table it makes, this tree beside main before this work
(BEFORE_REV, a temporary worktree), in the same run.

FILES random .c and .h files of the kernel tree (bench.kernel's: KERNEL_TREE or
bench/out/trees/kernel; at most 1 MiB each, the same files for both sides) are read once; then,
ROUNDS times, each side in turn counts them in a fresh interpreter (one cold pass, as a worker
meets its files: CPU seconds of that process, the reads left out), and hands the words to a
RepoGraph 500 files at a time, as the first build does: the word table's bytes (its arrays,
and main's vocabulary) and its entries. Medians of the rounds; the load average beside them.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.baseline import baseline_tree
from bench.kernel import kernel_tree

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REV = "1ce431b"  # main before issue 24's eighth pass (384 words a file)
FILES = 1500
ROUNDS = 3

_PROBE = r"""
import json, sys, time
from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.tags import FileTags
from tokend.core.repomap.text import count_words
paths = json.load(open(sys.argv[1]))
data = [open(p, "rb").read() for p in paths]
start = time.process_time()
said = [count_words(d) for d in data]
cpu = time.process_time() - start
graph = RepoGraph()
for at in range(0, len(said), 500):
    graph.set_files({f"f{i:05d}.c": FileTags(words=said[i]) for i in range(at, at + 500)
                     if i < len(said)})
print(json.dumps({"cpu": cpu, "entries": int(len(graph.words.ids)),
                  "bytes": int(graph.words.nbytes)}))
"""


def sample(tree: Path, count: int = FILES) -> list[str]:
    paths = sorted(
        str(Path(d) / f) for d, _, names in os.walk(tree) for f in names if f.endswith((".c", ".h"))
    )
    random.Random(22).shuffle(paths)
    return [p for p in paths if os.path.getsize(p) <= 1 << 20][:count]


def _probe(server: Path, listed: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(server))
    done = subprocess.run([sys.executable, "-c", _PROBE, str(listed)], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return dict(json.loads(done.stdout))


def run() -> str:
    paths = sample(kernel_tree())
    mb = sum(os.path.getsize(p) for p in paths) / 1e6
    got: dict[str, list[dict[str, float]]] = {"this tree": [], "main": []}
    loads = []
    with baseline_tree(BEFORE_REV) as before, tempfile.TemporaryDirectory() as tmp:
        if before is None:
            return f"### repomap_words\n\n{BEFORE_REV} is not in this clone: not measured.\n"
        listed = Path(tmp) / "paths.json"
        listed.write_text(json.dumps(paths))
        for _ in range(ROUNDS):
            loads.append(os.getloadavg()[0])
            got["this tree"].append(_probe(ROOT / "server", listed))
            got["main"].append(_probe(before / "server", listed))
    loads.append(os.getloadavg()[0])
    lines = [
        "### repomap_words: what files say, counted by the tag workers (kernel)\n",
        f"{len(paths):,} random .c/.h files of the kernel ({mb:.1f} MB), one cold pass each, "
        f"{ROUNDS} rounds alternating; main = {BEFORE_REV} in a temporary worktree. Load "
        f"average (1 min) {min(loads):.1f}-{max(loads):.1f}.\n",
        "| side | count_words CPU s (median; each round) | words a file | word table bytes a file |",
        "|---|---:|---:|---:|",
    ]
    for side, rounds in got.items():
        cpu = [r["cpu"] for r in rounds]
        lines.append(
            f"| {side} | {statistics.median(cpu):.3f} ({', '.join(f'{c:.3f}' for c in cpu)}) | "
            f"{rounds[0]['entries'] / len(paths):.1f} | {rounds[0]['bytes'] / len(paths):.0f} |"
        )
    ratio = statistics.median(r["cpu"] for r in got["this tree"]) / statistics.median(
        r["cpu"] for r in got["main"]
    )
    lines.append(f"\nCPU, this tree against main: {ratio:.2f}x.\n")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
