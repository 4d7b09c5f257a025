"""Restores and rewinds under attack and under kill -9, on a real `tokend serve` of any tree.

Shared by `bench.restore_safety` (every variant, this tree beside today's daemon) and the
regression tests in tests/checkpoints (fewer trials, this tree). It imports nothing of tokend:
it drives the daemon of `tree` (PYTHONPATH=<tree>/server) over its unix socket as a client
would, and judges by what is on disk.

An agent's turn is: a user message, an assistant tool call, the files changed on disk, the
watcher's log of them awaited (checkpoint/list), the tool result and a closing message.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.daemon import _Client, _env, _Processes, _unix_client

MODEL = "gpt-4o"
WAIT_S = 60.0  # how long a condition may take on a loaded machine (not a figure)
TEMP_SUFFIX = ".tokend-restore"


class RpcFailed(RuntimeError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"tokend answered an error: {error}")
        self.error = error


class Client(_Client):
    """bench.daemon's client, keeping the notifications that arrive (window/logMessage)."""

    notes: list[dict[str, Any]]

    def reply(self, request_id: int) -> Any:
        while True:
            message = self.read()
            if "method" in message and "id" not in message:
                self.notes.append(message)
            elif message.get("id") == request_id:
                break
        if "error" in message:
            raise RpcFailed(message["error"])
        return message.get("result")


def until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never happened: {what}")
        time.sleep(0.05)


class Rig:
    """A private data/runtime dir and `tokend serve` of `tree` (None: the running checkout)."""

    def __init__(self, base: Path, tree: Path | None = None) -> None:
        self.base = base
        env = _env(base)
        if tree is not None:
            env["PYTHONPATH"] = str(tree / "server")
        self.procs = _Processes(base, env)
        self.sock = base / "run" / "tokend" / "daemon.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.clients: list[Client] = []

    def start(self) -> None:
        self.proc = self.procs.daemon(self.sock)

    def client(self) -> Client:
        raw = _unix_client(self.sock, "restore-safety")
        client = Client(raw.read_fd, raw.write_fd, raw.keep)
        client.notes, client.next_id = [], raw.next_id
        self.clients.append(client)
        return client

    def kill(self) -> None:
        """kill -9 the daemon (by its PID) and forget its clients."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for client in self.clients:
            client.close()
        self.clients.clear()
        self.sock.unlink(missing_ok=True)

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.clients.clear()
        self.procs.stop_all()


def append(client: Client, sid: str, role: str, parts: list[dict[str, Any]]) -> str:
    message = {"role": role, "parts": parts}
    return str(
        client.request("session/append", {"sessionId": sid, "message": message})["messageId"]
    )


def agent_files(client: Client, sid: str) -> set[str]:
    listed = client.request("checkpoint/list", {"sessionId": sid})
    return {f["path"] for t in listed["turns"] for f in t["files"]}


def agent_turn(
    client: Client,
    ws: Path,
    change: Callable[[], None],
    logged: set[str],
    swap: Callable[[], None] | None = None,
) -> tuple[str, str]:
    """A session of `ws` and one turn in which the agent makes `change` (the watcher logs at
    least the paths `logged`), then `swap` happens (still in the turn). (session, first id)."""
    sid = client.request("session/create", {"model": MODEL, "workspaceUri": ws.as_uri()})[
        "sessionId"
    ]
    first = append(client, sid, "user", [{"type": "text", "text": "tidy the project"}])
    until(
        "the first walk",
        lambda: bool(client.request("checkpoint/list", {"sessionId": sid})["watching"]),
    )
    call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": "tidy"}}
    append(client, sid, "assistant", [call])
    change()
    until(f"the watcher logging {len(logged)} files", lambda: logged <= agent_files(client, sid))
    if swap is not None:
        before = agent_files(client, sid)
        swap()
        deadline = time.monotonic() + 3.0  # a symlink alone is no file change: nothing to see
        while agent_files(client, sid) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the rest of the swap's batch
    result = {"type": "toolResult", "callId": "c1", "name": "Bash", "output": "done"}
    append(client, sid, "tool", [result])
    append(client, sid, "assistant", [{"type": "text", "text": "tidied"}])
    return sid, first


def rewind_or_restore(
    client: Client, sid: str, to: str, method: str, force: bool = False
) -> dict[str, Any]:
    """checkpoint/restore, or session/rewind with restore "code" | "both" (`method`)."""
    if method == "checkpoint/restore":
        return client.request(
            "checkpoint/restore", {"sessionId": sid, "toMessageId": to, "force": force}
        )
    kind = method.split(":")[1]
    return client.request(
        "session/rewind", {"sessionId": sid, "toMessageId": to, "restore": kind, "force": force}
    )


METHODS = ("checkpoint/restore", "session/rewind:code", "session/rewind:both")


# -- a folder as it is on disk --------------------------------------------------------------


def tree_state(folder: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under `folder`: (kind, bytes or link target, permission bits)."""
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for current, dirs, files in os.walk(folder):
        for name in dirs + files:
            full = Path(current) / name
            st = full.lstat()
            rel = full.relative_to(folder).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", full.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def touched(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, int]:
    """(entries written or created, entries deleted) between two tree_state()s."""
    written = sum(1 for k, v in after.items() if before.get(k) != v)
    deleted = sum(1 for k in before if k not in after)
    return written, deleted


# -- swapped symlinks ---------------------------------------------------------------------

VARIANTS = (
    "folder swapped",
    "parent of parent swapped",
    "file swapped",
    "final component a symlink",
)


@dataclass
class VariantResult:
    variant: str
    method: str
    force: bool
    outside_written: int
    outside_deleted: int
    reported: int  # files the reply lists as kept with a reason naming a symlink
    modes_kept: bool  # the files restored inside have the modes they had before the turn
    dry_reported: int = 0  # as `reported`, from a dry run made just before


def symlink_variant(
    client: Client, base: Path, variant: str, method: str, force: bool
) -> VariantResult:
    """One turn whose folder (or file) is swapped for a symlink to `outside` before a restore;
    what the restore did outside, on disk."""
    run = random.randrange(1 << 30)  # a workspace of its own: a new folder, a new watch
    ws, outside = base / f"ws{run}", base / f"outside{run}"
    prefix = {"parent of parent swapped": "a/b/"}.get(variant, "d/")
    top = prefix.split("/")[0]
    (ws / prefix).mkdir(parents=True)
    (ws / "keep.env").write_bytes(b"TOKEN=1\n")
    os.chmod(ws / "keep.env", 0o600)
    (ws / prefix / "f.txt").write_bytes(b"F0\n")
    (ws / prefix / "h.txt").write_bytes(b"H0\n")
    os.chmod(ws / prefix / "h.txt", 0o640)
    modes = {"keep.env": 0o600}
    outside.mkdir()
    inner = outside / "/".join(prefix.split("/")[1:-1]) if prefix.count("/") > 1 else outside
    inner.mkdir(parents=True, exist_ok=True)
    (inner / "h.txt").write_bytes(b"H1\n")  # what the agent's file says: the restore's target
    (inner / "new.txt").write_bytes(b"N1\n")  # a file of the same name and bytes as the agent's
    (inner / "f.txt.orig").write_bytes(b"secret\n")

    def change() -> None:
        (ws / prefix / "f.txt").unlink()
        (ws / prefix / "h.txt").write_bytes(b"H1\n")
        (ws / prefix / "new.txt").write_bytes(b"N1\n")
        (ws / "keep.env").unlink()

    def swap() -> None:
        if variant in ("folder swapped", "parent of parent swapped"):
            os.rename(ws / top, ws / f"{top}.bak")
            os.symlink(outside, ws / top)
        elif variant == "file swapped":
            (ws / prefix / "h.txt").unlink()
            os.symlink(inner / "h.txt", ws / prefix / "h.txt")
            (ws / prefix / "new.txt").unlink()
            os.symlink(inner / "new.txt", ws / prefix / "new.txt")
        else:  # where the agent deleted f.txt, a symlink to an outside file now stands
            os.symlink(inner / "f.txt.orig", ws / prefix / "f.txt")

    logged = {f"{prefix}f.txt", f"{prefix}h.txt", f"{prefix}new.txt", "keep.env"}
    sid, first = agent_turn(client, ws, change, logged, swap)
    seen = tree_state(outside)
    dry = client.request(
        "checkpoint/restore",
        {"sessionId": sid, "toMessageId": first, "dryRun": True, "force": force},
    )
    dry_reported = sum(1 for f in dry["files"] if "symlink" in (f.get("reason") or ""))
    try:
        reply = rewind_or_restore(client, sid, first, method, force)
    except RpcFailed:
        reply = {}
    written, deleted = touched(seen, tree_state(outside))
    code = reply.get("code", reply)
    reported = sum(1 for f in code.get("files", []) if "symlink" in (f.get("reason") or ""))
    modes_kept = all(
        (ws / rel).is_file() and stat.S_IMODE((ws / rel).stat().st_mode) == mode
        for rel, mode in modes.items()
    )
    return VariantResult(
        variant, method, force, written, deleted, reported, modes_kept, dry_reported
    )


# -- modes ----------------------------------------------------------------------------------


def restored_modes(client: Client, base: Path, method: str) -> dict[str, tuple[int, int | None]]:
    """Files of modes 0600, 0640, 0755 the agent deleted or rewrote, then restored: each
    path's (mode before the turn, mode after the restore; None: not there)."""
    ws = base / f"modes{random.randrange(1 << 30)}"
    ws.mkdir()
    files = {".env": 0o600, "id_key": 0o600, "notes.txt": 0o640, "run.sh": 0o755}
    for name, mode in files.items():
        (ws / name).write_bytes(f"{name} v1\n".encode())
        os.chmod(ws / name, mode)

    def change() -> None:
        (ws / ".env").unlink()
        (ws / "id_key").unlink()
        (ws / "notes.txt").unlink()
        (ws / "run.sh").unlink()
        (ws / "run.sh").write_bytes(b"run.sh v2\n")  # a new file: the umask's mode

    sid, first = agent_turn(client, ws, change, set(files))
    rewind_or_restore(client, sid, first, method)
    out: dict[str, tuple[int, int | None]] = {}
    for name, mode in files.items():
        path = ws / name
        out[name] = (mode, stat.S_IMODE(path.stat().st_mode) if path.is_file() else None)
    return out


# -- kill -9 midway -------------------------------------------------------------------------


@dataclass
class KillTrial:
    method: str
    delay_s: float
    answered: bool  # the restore's reply arrived before the kill
    restored: int  # files at the checkpoint's bytes after the restart
    files: int
    reported: bool  # checkpoint/list's `interrupted` names it (or a logMessage said so)
    log_message: bool
    temporaries: int  # .tokend-restore files left in the workspace
    conversation_rewound: bool | None  # "both": the live context lost the turn's messages
    notes: list[str] = field(default_factory=list)

    @property
    def half(self) -> bool:
        return 0 < self.restored < self.files

    @property
    def half_unreported(self) -> bool:
        return self.half and not self.reported

    @property
    def both_split(self) -> bool:
        """Files restored (all) but not the conversation, or the other way round."""
        if self.conversation_rewound is None:
            return False
        return (self.restored == self.files) != self.conversation_rewound or (
            self.half and not self.reported
        )


def kill_trial(rig: Rig, base: Path, method: str, files: int, delay_s: float) -> KillTrial:
    """A turn that rewrote `files` files (and deleted some), a restore killed -9 `delay_s` after
    it was asked for, a restart: what the workspace and the user see."""
    ws = base / f"kill{random.randrange(1 << 30)}"
    ws.mkdir()
    names = [f"pkg{i % 10}/sub{i % 3}/m{i}.py" for i in range(files)]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(f"# {name}\nVALUE = 1\n".encode())

    def change() -> None:
        for i, name in enumerate(names):
            if i % 5 == 0:
                (ws / name).unlink()
            else:
                (ws / name).write_bytes(f"# {name}\nVALUE = 2\n".encode())

    client = rig.client()
    sid, first = agent_turn(client, ws, change, set(names))
    kind = "both" if method.endswith("both") else "code"
    params: dict[str, Any] = {"sessionId": sid, "toMessageId": first}
    if method == "checkpoint/restore":
        request = client.start_request("checkpoint/restore", params)
    else:
        request = client.start_request("session/rewind", params | {"restore": kind})
    time.sleep(delay_s)
    answered = _answered(client, request)
    rig.kill()
    rig.start()
    after = rig.client()
    listed = after.request("checkpoint/list", {"sessionId": sid})  # after the settling
    interrupted = listed.get("interrupted", [])
    restored = sum(
        1 for name in names if (ws / name).is_file() and b"VALUE = 1" in (ws / name).read_bytes()
    )
    temporaries = sum(1 for p in ws.rglob(f"*{TEMP_SUFFIX}"))
    rewound = None
    if kind == "both":
        live = after.request("session/messages", {"sessionId": sid})["messages"]
        rewound = [m["messageId"] for m in live][-1] == first
    time.sleep(0.2)
    after.request("budget/snapshot", {"sessionId": sid})  # any logMessage arrives before it
    logged = any(
        n.get("method") == "window/logMessage" and "interrupted" in n["params"]["message"]
        for n in after.notes
    )
    after.close()
    rig.clients.remove(after)
    shutil.rmtree(ws, ignore_errors=True)
    return KillTrial(
        method,
        delay_s,
        answered,
        restored,
        files,
        bool(interrupted) or logged,
        logged,
        temporaries,
        rewound,
        [json.dumps(interrupted)[:300]],
    )


def _answered(client: Client, request: int) -> bool:
    """Whether the reply to `request` has arrived (read without waiting)."""
    while select.select([client.read_fd], [], [], 0)[0]:
        chunk = os.read(client.read_fd, 1 << 16)
        if not chunk:
            return False
        client.buffer += chunk
    while b"\r\n\r\n" in client.buffer:
        end = client.buffer.find(b"\r\n\r\n")
        header = client.buffer[:end].lower()
        length = int(header.split(b"content-length:")[1].split(b"\r\n")[0])
        if len(client.buffer) < end + 4 + length:
            return False
        message = json.loads(client.buffer[end + 4 : end + 4 + length])
        client.buffer = client.buffer[end + 4 + length :]
        if message.get("id") == request:
            return True
    return False
