"""files/add, files/drop, files/list: the files a session sends, with what each costs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from tokend.lsp import wire
from tokend.service.workspace.session_files import (
    SessionWorkspace,
    change_files,
    session_workspace,
)

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer


@attrs.frozen
class FilesChangeParams:
    session_id: str
    paths: list[str]
    read_only: bool = False


@attrs.frozen
class FilesListParams:
    session_id: str


def to_wire_listing(gathered: SessionWorkspace) -> dict[str, Any]:
    """Every file with the tokens of its block as sent; memory files with theirs (0 when
    cut, with the reason); the chunk totals."""
    files = []
    for f in gathered.files:
        item: dict[str, Any] = {
            "path": f.path,
            "readOnly": f.read_only,
            "tokens": f.tokens,
            "dirty": f.dirty,
        }
        if f.reason:
            item["reason"] = f.reason
        files.append(item)
    memory = []
    for m in gathered.memory.entries:
        entry: dict[str, Any] = {"path": m.path, "scope": m.scope, "tokens": m.tokens}
        if m.cut:
            entry["cut"] = m.cut
        if m.note:
            entry["note"] = m.note
        memory.append(entry)
    return {
        "files": files,
        "memory": memory,
        "chatFilesTokens": gathered.chat_tokens,
        "memoryTokens": gathered.memory_tokens,
        "warnings": list(gathered.memory.warnings),
    }


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    @server.feature("files/add")
    @rpc
    async def add(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(FilesChangeParams, params)
        ls.watch(p.session_id)
        workspaces = ls.app.workspaces
        gathered = await change_files(workspaces, p.session_id, p.paths, read_only=p.read_only)
        return to_wire_listing(gathered)

    @server.feature("files/drop")
    @rpc
    async def drop(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(FilesChangeParams, params)
        ls.watch(p.session_id)
        workspaces = ls.app.workspaces
        gathered = await change_files(workspaces, p.session_id, p.paths, read_only=None)
        return to_wire_listing(gathered)

    @server.feature("files/list")
    @rpc
    async def list_files(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(FilesListParams, params)
        gathered = await session_workspace(ls.app.workspaces, p.session_id)
        return to_wire_listing(gathered)
