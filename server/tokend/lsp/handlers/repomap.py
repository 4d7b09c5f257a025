"""The repomap feature: repoMap/get: the session's repo map within a budget, for a focus.

The reply is written as JSON text beside the loop (lsp.wire.JsonText), where the map is made:
the 211 ranked files of a SQLAlchemy map cost ~0.35 ms on the loop as wire objects, converted,
looked at and encoded there. A connection asking for the same map again (the map's cache hands
back the same one) gets the text it was sent last, not the map written again.
"""

from __future__ import annotations

import json

from tokend.core.repomap.graph import Focus
from tokend.lsp.handler_table import features
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import JsonText, to_wire
from tokend.lsp.wire.repomap import RankedFileWire, RepoMapParams, RepoMapResult
from tokend.service.repomap.session_map import (
    RepoMap,
    load_counter,
    map_ready,
    reads_words,
    session_map,
)
from tokend.service.workspace.session_files import session_index


async def get(ls: TokendServer, params: RepoMapParams) -> JsonText | RepoMapResult:
    p, service = params, ls.service
    data = service.sessions.state(p.session_id).data
    workspaces = ls.app.workspaces
    index = session_index(workspaces, data)
    await workspaces.ready(index.uri)
    await workspaces.settled(index)  # the buffers sent before this request are tagged
    await map_ready(index, meanwhile=lambda: load_counter(workspaces, data))
    focus = None
    if p.focus is not None:
        files = frozenset(index.relative(f) for f in p.focus.files)
        focus = Focus(files, frozenset(p.focus.identifiers), p.focus.text)
    await map_ready(index, reads_words(index, data, focus))  # what files say: after the tags
    last = ls.last_repo_map

    def reply() -> tuple[RepoMap, JsonText | RepoMapResult]:
        found = session_map(workspaces, data, p.budget_tokens, focus)
        if last is not None and last[0] == found:
            return found, last[1]
        return found, reply_text(found)

    found, text = await service.workers.run(reply)
    ls.last_repo_map = (found, text)
    return text


def to_wire_repo_map(found: RepoMap) -> RepoMapResult:
    """The result (protocol.md, repoMap/get): scores rounded to 6 places."""
    ranked = [RankedFileWire(path, round(score, 6)) for path, score in found.files]
    return RepoMapResult(found.text, found.tokens, ranked, found.basis, found.budget_tokens)


def reply_text(found: RepoMap) -> JsonText | RepoMapResult:
    """The result as json.dumps writes it (call it beside the loop); one holding NaN is given
    back as the wire class, for the connection to refuse as it refuses any such reply."""
    result = to_wire_repo_map(found)
    try:
        return JsonText(json.dumps(to_wire(result), allow_nan=False))
    except ValueError:
        return result


FEATURES = features({"repoMap/get": get})
