"""A session's files (files/add, /drop, /list) and what the workspace puts in its window.

The list lives in the session's `chat_files` ([ChatFile(path, read_only)], paths relative
to the session's workspace), written through the session's owner (service.changes.update_info). Every
change of the list, and every change on disk or in an editor to a listed file or a memory file,
re-measures the session's `chatFiles` and `memory` categories (memory files + read-only files)
and publishes a new snapshot (budget/didChange).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from tokend.core.assembly.context_inputs import file_block_text
from tokend.core.errors import InvalidParams
from tokend.core.session.data import SessionData
from tokend.core.types import ChatFile
from tokend.core.workspace.memory import DEFAULT_MEMORY_CAP_TOKENS, MemoryChunk, build_chunk
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.memory import MemoryRoots, memory_files
from tokend.service.workspace.registry import Workspaces

log = logging.getLogger(__name__)

MEMORY_NAMES = ("CLAUDE.md", "AGENTS.md", "CLAUDE.local.md")


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A file in the session's window: `tokens` of its block as sent (path + fenced text)."""

    path: str
    read_only: bool
    text: str
    tokens: int
    dirty: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SessionWorkspace:
    files: tuple[SessionFile, ...]
    memory: MemoryChunk

    @property
    def chat_tokens(self) -> int:
        return sum(f.tokens for f in self.files if not f.read_only)

    @property
    def memory_tokens(self) -> int:
        return self.memory.tokens + sum(f.tokens for f in self.files if f.read_only)

    def read_only_texts(self) -> list[tuple[str, str]]:
        memory = [(m.path, m.text) for m, _ in self.memory.kept]
        return memory + [(f.path, f.text) for f in self.files if f.read_only]

    def chat_texts(self) -> list[tuple[str, str]]:
        return [(f.path, f.text) for f in self.files if not f.read_only]


def listed(data: SessionData) -> list[tuple[str, bool]]:
    """(path, read-only) of the session's files, in the order they were added."""
    return [(f.path, f.read_only) for f in data.info.chat_files]


def session_index(workspaces: Workspaces, data: SessionData) -> WorkspaceIndex:
    uri = data.info.workspace_uri
    if not uri:
        raise InvalidParams(
            f"session {data.id} has no workspaceUri: files are paths in a workspace; create "
            "the session with session/create {workspaceUri}"
        )
    return workspaces.open(uri)


def gather(
    workspaces: Workspaces, data: SessionData, roots: MemoryRoots | None = None
) -> SessionWorkspace:
    """Read and count the session's files and memory (file reads: call it off the loop)."""
    index = session_index(workspaces, data)
    count = workspaces.service.models.counter(data.model).count_text
    index.buffers.settle([p for p, _ in listed(data)])  # the buffers sent before count
    files = []
    for path, read_only in listed(data):
        current = index.read(path)
        tokens = count(file_block_text(path, current.text)) if current.sha256 else 0
        files.append(
            SessionFile(path, read_only, current.text, tokens, current.dirty, current.reason)
        )
    found = memory_files(index.root, [p for p, _ in listed(data)], roots)
    memory = build_chunk(found, DEFAULT_MEMORY_CAP_TOKENS, lambda t: count(t) if t else 0)
    return SessionWorkspace(tuple(files), memory)


def measure(workspaces: Workspaces, session_id: str, gathered: SessionWorkspace) -> None:
    """Record the files' and memory's tokens in the session's breakdown and announce it
    (on the event loop)."""
    service = workspaces.service
    state = service.sessions.state(session_id)
    measured = dict(state.data.measured)
    for key, tokens in (("chatFiles", gathered.chat_tokens), ("memory", gathered.memory_tokens)):
        if tokens:
            measured[key] = tokens
        else:
            measured.pop(key, None)
    exact = service.models.counter(state.data.model).exact
    service.changes.set_measured(session_id, measured, exact)
    service.changes.republish(session_id)


async def change_files(
    workspaces: Workspaces,
    session_id: str,
    paths: Sequence[str],
    *,
    read_only: bool | None,
) -> SessionWorkspace:
    """Add `paths` (read_only True/False) or drop them (read_only None); the new state."""
    service = workspaces.service
    data = service.sessions.state(session_id).data
    index = session_index(workspaces, data)
    rels = [index.relative(p) for p in paths]
    if read_only is not None:
        await workspaces.settled(index, rels)
        checked = await service.workers.run(lambda: [index.read(r) for r in rels])
        for rel, current in zip(rels, checked, strict=True):
            if not current.sha256 and current.reason:
                raise InvalidParams(f"cannot add {rel}: {current.reason}")
    current_list = [(p, ro) for p, ro in listed(data) if p not in rels]
    if read_only is not None:
        current_list += [(r, read_only) for r in dict.fromkeys(rels)]
    service.changes.update_info(
        session_id, chat_files=tuple(ChatFile(p, ro) for p, ro in current_list)
    )
    data = service.sessions.state(session_id).data
    gathered = await service.workers.run(lambda: gather(workspaces, data))
    measure(workspaces, session_id, gathered)
    return gathered


async def session_workspace(workspaces: Workspaces, session_id: str) -> SessionWorkspace:
    data = workspaces.service.sessions.state(session_id).data
    return await workspaces.service.workers.run(lambda: gather(workspaces, data))


class Remeasures:
    """The re-measures file changes start, each a task on the event loop kept until it ends.
    The composition root (service/app_workspaces.py) builds one and hooks it into the
    workspaces; the app's `close` cancels the tasks still running, before it ends the workers
    and the store they would use."""

    def __init__(self, workspaces: Workspaces) -> None:
        self._workspaces = workspaces
        self._pending: set[asyncio.Future[None]] = set()

    def after_change(self, index: WorkspaceIndex, paths: set[str]) -> None:
        """After `paths` of `index` changed (on the loop): re-measure the loaded sessions they
        concern."""
        memory_touched = any(
            p.split("/")[-1] in MEMORY_NAMES or p.startswith(".claude/") for p in paths
        )
        workspaces = self._workspaces
        service = workspaces.service
        for snapshot in service.sessions.loaded_snapshots():
            data = service.sessions.state(snapshot.session_id).data
            uri = data.info.workspace_uri
            if not uri or workspaces.get(uri) is not index:
                continue
            if memory_touched or any(p in paths for p, _ in listed(data)):
                task = asyncio.ensure_future(_remeasure(workspaces, data.id))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

    def close(self) -> None:
        """Cancel the re-measures still running (none is started after)."""
        for task in list(self._pending):
            task.cancel()
        self._pending.clear()


async def _remeasure(workspaces: Workspaces, session_id: str) -> None:
    try:
        gathered = await session_workspace(workspaces, session_id)
        measure(workspaces, session_id, gathered)
    except Exception:
        log.exception("re-measuring session %s after a file change failed", session_id)
