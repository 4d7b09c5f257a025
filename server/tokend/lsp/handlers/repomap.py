"""repoMap/get: the session's repo map within a budget, for a focus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from tokend.core.repomap import Focus
from tokend.lsp import wire
from tokend.service.workspace.repomap import map_ready, session_map
from tokend.service.workspace.session_files import session_index

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer


@attrs.frozen
class FocusParams:
    files: list[str] = attrs.Factory(list)
    identifiers: list[str] = attrs.Factory(list)
    text: str = ""


@attrs.frozen
class RepoMapParams:
    session_id: str
    budget_tokens: int | None = None
    focus: FocusParams | None = None


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    @server.feature("repoMap/get")
    @rpc
    async def get(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(RepoMapParams, params)
        service = ls.service
        data = service.sessions.state(p.session_id).data
        workspaces = ls.app.workspaces
        index = session_index(workspaces, data)
        await workspaces.ready(index.uri)
        await workspaces.settled(index)  # the buffers sent before this request are tagged
        await map_ready(index)
        focus = None
        if p.focus is not None:
            files = frozenset(index.relative(f) for f in p.focus.files)
            focus = Focus(files, frozenset(p.focus.identifiers), p.focus.text)
        found = await service.workers.run(
            lambda: session_map(workspaces, data, p.budget_tokens, focus)
        )
        return {
            "text": found.text,
            "tokens": found.tokens,
            "files": [{"path": path, "score": round(score, 6)} for path, score in found.files],
            "basis": found.basis,
            "budgetTokens": found.budget_tokens,
        }
