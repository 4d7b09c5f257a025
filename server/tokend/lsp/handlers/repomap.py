"""The repomap feature: repoMap/get: the session's repo map within a budget, for a focus."""

from __future__ import annotations

from tokend.core.repomap.graph import Focus
from tokend.lsp.handler_table import features
from tokend.lsp.server import TokendServer
from tokend.lsp.wire.repomap import RankedFileWire, RepoMapParams, RepoMapResult
from tokend.service.repomap.session_map import map_ready, session_map
from tokend.service.workspace.session_files import session_index


async def get(ls: TokendServer, params: RepoMapParams) -> RepoMapResult:
    p, service = params, ls.service
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
    found = await service.workers.run(lambda: session_map(workspaces, data, p.budget_tokens, focus))
    ranked = [RankedFileWire(path, round(score, 6)) for path, score in found.files]
    return RepoMapResult(found.text, found.tokens, ranked, found.basis, found.budget_tokens)


FEATURES = features({"repoMap/get": get})
