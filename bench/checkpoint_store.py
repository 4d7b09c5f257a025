"""Checkpoint store: the first walk of a tree of many small files, and what the store takes on disk.

A generated tree (FILES_BIG or FILES_SMALL files of ~74 bytes on average, each different, 10
per folder three levels deep) is opened as an editor opens a workspace: the real
`tokend lsp --standalone` is started with the tree as its working folder and `rootUri`, a
session is created on the tree and one user message appended, and `checkpoint/list` is asked
every POLL_S until it answers `watching` (the checkpointer's first walk is saved). The walk's
time runs from `initialize` to that answer (the workspace index's build included: the walk
starts when it ends), beside the CPU the process used meanwhile (all its threads: the machine is
shared and the walk runs at a lower priority, so its wall time follows the load; its CPU time
does not). The store's size is what `du` counts: the blocks its files take in the
data dir's `checkpoints/`, with the number of files in it.

Today's daemon (bench.baseline.BEFORE_TRUST_REV, checked out beside this tree) runs the same,
on the same trees, in the same run.

`python -m bench.checkpoint_store` prints the section.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import BEFORE_TRUST_REV, baseline_tree

FILES_BIG = 100_000
FILES_SMALL = 20_000
REPEATS_SMALL = 3
TODAY = f"today's daemon ({BEFORE_TRUST_REV})"
OURS = "this tree"
POLL_S = 0.5
WALK_TIMEOUT_S = 3600.0
SERVER = Path(__file__).resolve().parents[1] / "server"


def make_tree(root: Path, files: int) -> int:
    """`files` different files of 40-110 bytes (74 on average), 10 per folder, 3 levels of
    folders; their total size."""
    total = 0
    for i in range(files):
        folder = root / f"d{i // 10_000}" / f"e{i // 1_000 % 10}" / f"f{i // 10 % 100}"
        if i % 10 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        head = f"# file {i}\nvalue_{i} = {i * 7919 % 100_003}\n"
        body = (head + "#" * 110)[: 40 + (i * 37) % 71]
        (folder / f"m{i}.py").write_text(body)
        total += len(body)
    return total


def _disk_usage(folder: Path) -> tuple[int, int]:
    """(bytes of the blocks the files under `folder` take, number of files), as `du` counts."""
    blocks, count = 0, 0
    for current, _dirs, names in os.walk(folder):
        blocks += os.lstat(current).st_blocks
        for name in names:
            blocks += os.lstat(os.path.join(current, name)).st_blocks
            count += 1
    return blocks * 512, count


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Walk = tuple[float, float, int, int]  # wall s, CPU s, store bytes on disk, files in the store


def first_walk(server_dir: Path, tree: Path, home: Path) -> Walk:
    """(seconds from initialize to `watching`, the process's CPU seconds by then, store bytes
    on disk, store files) for the daemon whose code is in `server_dir`, its data dir in `home`."""
    from bench.daemon import _Client

    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    env["PYTHONPATH"] = str(server_dir)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(home)
    env["TOKEND_DATABASE_URL"] = f"sqlite:///{home / 'tokend.sqlite3'}"
    home.mkdir(mode=0o700)
    with open(home / "lsp.err", "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "lsp", "--standalone"],
            env=env,
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert proc.stdin is not None and proc.stdout is not None
    client = _Client(proc.stdout.fileno(), proc.stdin.fileno(), proc)
    try:
        uri = tree.as_uri()
        started = time.perf_counter()
        client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": tree.name}],
                "capabilities": {},
                "clientInfo": {"name": "bench-checkpoint-store"},
            },
        )
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        sid = client.request("session/create", {"model": "gpt-4o", "workspaceUri": uri})
        message = {"role": "user", "parts": [{"type": "text", "text": "look around"}]}
        client.request("session/append", {"sessionId": sid["sessionId"], "message": message})
        while not client.request("checkpoint/list", {"sessionId": sid["sessionId"]})["watching"]:
            if time.perf_counter() - started > WALK_TIMEOUT_S:
                raise TimeoutError(f"no first walk in {WALK_TIMEOUT_S:.0f} s")
            time.sleep(POLL_S)
        seconds, cpu = time.perf_counter() - started, _cpu_seconds(proc.pid)
        client.request("shutdown")
        client.send({"jsonrpc": "2.0", "method": "exit"})
    finally:
        client.close()
    size, count = _disk_usage(home / "tokend" / "checkpoints")
    return seconds, cpu, size, count


def run() -> str:
    samples: dict[tuple[str, int], list[Walk]] = {}
    with tempfile.TemporaryDirectory(prefix="tokend-bench-cs-") as tmp:
        base = Path(tmp)
        trees = {n: base / f"tree{n}" for n in (FILES_SMALL, FILES_BIG)}
        raw = {n: make_tree(tree, n) for n, tree in trees.items()}
        with baseline_tree(BEFORE_TRUST_REV) as before:
            if before is None:
                raise RuntimeError(f"this clone lacks {BEFORE_TRUST_REV} (today's daemon)")
            daemons = {TODAY: before / "server", OURS: SERVER}
            runs = [(n, name) for n in [FILES_SMALL] * REPEATS_SMALL for name in daemons]
            for i, (n, name) in enumerate([*runs, (FILES_BIG, TODAY), (FILES_BIG, OURS)]):
                walk = first_walk(daemons[name], trees[n], base / f"home-{i}")
                samples.setdefault((name, n), []).append(walk)
    return _section(samples, raw)


def _median(walks: list[Walk]) -> Walk:
    wall, cpu, size, count = (statistics.median(w[k] for w in walks) for k in range(4))
    return wall, cpu, int(size), int(count)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _section(samples: dict[tuple[str, int], list[Walk]], raw: dict[int, int]) -> str:
    lines = [
        "### checkpoint store",
        "",
        "A generated tree of small files (10 per folder, 3 levels), opened by the real "
        "`tokend lsp --standalone` as an editor opens its folder; first walk = `initialize` to "
        "`checkpoint/list` answering `watching` (the index's build and tags included), CPU = the "
        "process's CPU time by then; store = the blocks the data dir's `checkpoints/` takes on "
        f"disk. {FILES_SMALL:,} files: median of {REPEATS_SMALL} runs each, interleaved; "
        f"{FILES_BIG:,} files: one run each.",
        "",
        "| daemon | files | tree | first walk | CPU | store on disk | files in the store |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n in (FILES_SMALL, FILES_BIG):
        for name in (TODAY, OURS):
            seconds, cpu, size, count = _median(samples[(name, n)])
            lines.append(
                f"| {name} | {n:,} | {_mb(raw[n])} | {seconds:,.1f} s | {cpu:,.1f} s "
                f"| {_mb(size)} | {count:,} |"
            )
    lines.append("")
    for n in (FILES_SMALL, FILES_BIG):
        (b_s, b_c, b_z, _), (o_s, o_c, o_z, _) = (_median(samples[(d, n)]) for d in (TODAY, OURS))
        lines.append(
            f"{n:,} files: first walk x{b_s / o_s:.1f} faster ({b_s:,.1f} -> {o_s:,.1f} s), "
            f"CPU x{b_c / o_c:.1f} less ({b_c:,.1f} -> {o_c:,.1f} s), store x{b_z / o_z:.1f} "
            f"smaller ({_mb(b_z)} -> {_mb(o_z)})."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
