"""Checkpoints: what saving every turn's files costs, on a real git repository of 1,000 files.

A temp repository (1,000 source-like files of ~2 KB, two branches that differ in every file)
is watched by the real workspace registry and checkpointed by the real Checkpoints, through a
session on a real SQLite store. Each turn is a user message, the change made on disk (as an
edit tool or a shell would), the watcher's batch awaited, and the closing assistant message.

- "on the loop" is the time the checkpointer's snapshot listener takes per turn (the only part
  that runs where the event loop would: it reads the new messages and queues their marks);
  "off the loop" is the watcher-thread work (reading, hashing, saving the changed files);
- bytes are what the turn added to the checkpoint folder (zlib-compressed blobs), beside the
  raw size of the states it saved;
- growth over 100 turns (3 files edited per turn, every 10th turn also switching branches)
  with content-addressed dedupe, beside the raw size a copy per turn of every changed file's
  earlier state would take.

`python -m bench.checkpoints` prints the section.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.service_shape import append, sessions

FILES = 1_000
TURNS = 100


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _repo(root: Path) -> None:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "bench@example.invalid")
    _git(root, "config", "user.name", "bench")
    for i in range(FILES):
        folder = root / f"pkg{i // 100}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(60))
        (folder / f"mod{i}.py").write_text(f'"""Module {i}."""\n\n' + body)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "main")
    _git(root, "checkout", "-q", "-b", "other")
    for path in root.glob("pkg*/mod*.py"):
        path.write_text(path.read_text().replace("return x *", "return x **", 5))
    _git(root, "commit", "-q", "-am", "other")
    _git(root, "checkout", "-q", "main")


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="tokend-bench-cp-") as tmp:
        base = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(base / "data")  # the workspace cache goes here too
        return _measure(base)


def _measure(base: Path) -> str:
    from tokend.adapters.checkpoint_store import CheckpointStore
    from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
    from tokend.service.app import assemble_app, open_service

    root = base / "repo"
    _repo(root)
    service = open_service(None, f"sqlite:///{base}/tokend.sqlite3")
    app = assemble_app(service, checkpoint_store=CheckpointStore(base / "checkpoints"))
    cp = app.checkpoints
    loop_ms: list[float] = []
    loop_cpu_ms: list[float] = []
    batch_ms: list[float] = []
    on_snapshot, on_batch = cp.on_snapshot, cp.on_batch

    def timed_snapshot(snapshot: object) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        on_snapshot(snapshot)  # type: ignore[arg-type]
        loop_ms.append((time.perf_counter() - started) * 1000)
        loop_cpu_ms.append((time.thread_time() - cpu) * 1000)

    def timed_batch(*args: object) -> None:
        started = time.perf_counter()
        on_batch(*args)  # type: ignore[arg-type]
        batch_ms.append((time.perf_counter() - started) * 1000)

    service._listeners._every[-1] = timed_snapshot  # type: ignore[attr-defined]
    app.workspaces.batch_hooks[-1] = timed_batch
    key = root.resolve().as_uri()
    sid = sessions(service).create_session("gpt-4o", workspace_uri=root.as_uri()).id

    def wait(what: str, ok: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 120
        while not ok():
            if time.monotonic() > deadline:
                raise RuntimeError(f"never happened: {what}")
            time.sleep(0.01)

    started = time.perf_counter()
    append(service, sid, "user", [TextPart("warm up")])
    wait("the first walk", lambda: cp.walked(key))
    walk_s = time.perf_counter() - started
    first = cp.store.figures()
    raw_states = 0

    def turn(change: Callable[[], None], paths: int) -> tuple[float, float, float, int, int]:
        nonlocal raw_states
        loop_ms.clear()
        loop_cpu_ms.clear()
        batch_ms.clear()
        before = cp.store.figures()
        seq = max((c.seq for c in cp.store.changes(key)), default=0)
        append(service, sid, "user", [TextPart("next task")])
        append(service, sid, "assistant", [ToolCallPart("c", "Bash", {"command": "edit"})])
        change()
        wait("the batch", lambda: len([c for c in cp.store.changes(key) if c.seq > seq]) >= paths)
        append(service, sid, "tool", [ToolResultPart("c", "Bash", "ok")])
        append(service, sid, "assistant", [TextPart("done")])
        cp.submit(lambda: None).result()  # the marks are written
        after = cp.store.figures()
        new = [c for c in cp.store.changes(key) if c.seq > seq]
        raw_states += sum(len(cp.store.blob(c.before) or b"") for c in new if c.before)
        stored = after.stored_bytes - before.stored_bytes
        return sum(loop_ms), sum(loop_cpu_ms), sum(batch_ms), stored, len(new)

    counter = [0]

    def edit3() -> None:
        counter[0] += 1
        for i in range(3):
            path = root / f"pkg{i}" / f"mod{i * 100 + 7}.py"
            path.write_text(path.read_text() + f"\n# edit {counter[0]}\n")

    branch = ["other"]

    def switch() -> None:
        _git(root, "checkout", "-q", "-f", branch[0])  # the edits go: it is a switch
        branch[0] = "main" if branch[0] == "other" else "other"

    e_loop, e_cpu, e_off, e_bytes, _ = turn(edit3, 3)
    s_loop, s_cpu, s_off, s_bytes, s_files = turn(switch, FILES)
    raw_states = 0
    grown_from = cp.store.figures()
    loops, cpus = [], []
    for n in range(TURNS):
        done = turn(lambda: (edit3(), switch()), FILES) if n % 10 == 9 else turn(edit3, 3)
        loops.append(done[0])
        cpus.append(done[1])
    grown = cp.store.figures()
    app.close()
    return "\n".join(
        [
            "### checkpoints",
            "",
            f"A git repository of {FILES:,} files ({_mb(first.raw_bytes)}); the first walk saved "
            f"every file in {walk_s:.1f} s (off the loop): {_mb(first.stored_bytes)} stored "
            f"for {_mb(first.raw_bytes)} of files (zlib).",
            "",
            "| turn (4 appends) | on the loop: CPU | on the loop: wall | off the loop "
            "(watcher thread) | files | bytes stored |",
            "|---|---|---|---|---|---|",
            f"| edit 3 files | {e_cpu:.3f} ms | {e_loop:.3f} ms | {e_off:.1f} ms | 3 | "
            f"{e_bytes:,} |",
            f"| git checkout (every file differs) | {s_cpu:.3f} ms | {s_loop:.3f} ms | "
            f"{s_off:,.0f} ms | {s_files:,} | {s_bytes:,} |",
            "",
            "Wall time on the loop includes waiting for the interpreter lock while the "
            "checkpoint and watcher threads hash and compress; CPU is the listener's own work.",
            "",
            f"{TURNS} turns (3 files edited each, every 10th also switching branches): the store "
            f"grew {_mb(grown.stored_bytes - grown_from.stored_bytes)} with dedupe; a copy of every "
            f"changed file's earlier state per turn would be {_mb(raw_states)} raw. On the loop "
            f"per turn: CPU median {statistics.median(cpus):.3f} ms (max {max(cpus):.3f}); "
            f"wall median {statistics.median(loops):.3f} ms (max {max(loops):.3f}).",
            "",
        ]
    )


if __name__ == "__main__":
    print(run())
