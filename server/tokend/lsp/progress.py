"""$/progress on a connection: a cancellable one for compactions (session/compact with the
client's token; an automatic one on a token the server creates) and one for an index build.
Shared by the session, compaction, assembly and workspace handlers."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from lsprotocol.types import ProgressToken

from tokend.service.compaction.auto_compaction import AutoProgress
from tokend.service.workspace.registry import Progress

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer

log = logging.getLogger(__name__)

CREATE_WAIT_S = 5.0  # how long an automatic compaction waits for the client to accept a token
_compact_tokens = itertools.count(1)
_index_tokens = itertools.count(1)


def begin_cancellable(
    ls: TokendServer, token: ProgressToken, title: str, cancel: Callable[[], object]
) -> None:
    """$/progress begin with `cancellable: true`; window/workDoneProgress/cancel of `token`
    calls `cancel` (pygls cancels the token's future; its callback does the rest)."""
    progress = ls.work_done_progress
    progress.tokens.pop(token, None)  # a token a client uses again starts afresh
    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
    progress.tokens[token].add_done_callback(lambda f: cancel() if f.cancelled() else None)


def end_progress(ls: TokendServer, token: ProgressToken, message: str) -> None:
    ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
    ls.work_done_progress.tokens.pop(token, None)


class _AutoProgress:
    """An automatic compaction's $/progress on the connection whose append started it: a
    token the server creates (window/workDoneProgress/create), a cancellable begin, an end."""

    def __init__(self, ls: TokendServer) -> None:
        self._ls = ls
        self._token: str | None = None

    async def begin(self, cancel: Callable[[], object]) -> None:
        token = f"tokend-compact-{next(_compact_tokens)}"
        try:
            created = self._ls.work_done_progress.create_async(token)
            _ = await asyncio.wait_for(created, CREATE_WAIT_S)
        except Exception as error:  # the client refused or did not answer: no progress
            log.info("no progress for an automatic compaction: %r", error)
            return
        self._token = token
        begin_cancellable(self._ls, token, "tokend: compacting the session (automatic)", cancel)

    def end(self, message: str) -> None:
        if self._token is not None:
            end_progress(self._ls, self._token, message)


def auto_progress(ls: TokendServer) -> AutoProgress | None:
    """Progress for an automatic compaction, when the client handles work-done progress."""
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if window is None or not window.work_done_progress:
        return None
    return _AutoProgress(ls)


class _IndexProgress:
    """An index build's $/progress on one token, created only when a build begins: `begin` is
    sent once the client answered window/workDoneProgress/create, reports and the end after
    it; if the client refused the token (an error answer), nothing is sent on it."""

    def __init__(self, ls: TokendServer) -> None:
        self._ls = ls
        self._token: str | None = None
        self._pending: list[tuple[str, str]] | None = []  # None once created (or refused)
        self._refused = False

    def tell(self, kind: str, message: str) -> None:
        """One step of the build (on the event loop)."""
        if self._refused:
            return
        if self._pending is not None:
            self._pending.append((kind, message))
            if self._token is None:
                self._create()
            return
        self._send(kind, message)

    def _create(self) -> None:
        self._token = token = f"tokend-index-{next(_index_tokens)}"
        params = types.WorkDoneProgressCreateParams(token=token)
        answer = self._ls.protocol.send_request(types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)
        answer.add_done_callback(self._created)

    def _created(self, answer: Future[Any]) -> None:
        error = None if answer.cancelled() else answer.exception()
        pending, self._pending = self._pending or [], None
        if answer.cancelled() or error is not None:
            self._refused = True
            log.info("no progress for indexing: the client refused its token (%s)", error)
            return
        for kind, message in pending:
            self._send(kind, message)

    def _send(self, kind: str, message: str) -> None:
        token, progress = self._token, self._ls.work_done_progress
        assert token is not None
        if kind == "begin":
            progress.begin(token, types.WorkDoneProgressBegin(title="tokend", message=message))
        elif kind == "report":
            progress.report(token, types.WorkDoneProgressReport(message=message))
        else:
            progress.end(token, types.WorkDoneProgressEnd(message=message))
            progress.tokens.pop(token, None)


def progress_of(ls: TokendServer) -> Progress | None:
    """$/progress for an index build, when the client said it handles work-done progress. The
    token is created when a build begins, so a request that finds its workspace indexed (or
    being indexed for another request) creates none."""
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if window is None or not window.work_done_progress:
        return None
    return _IndexProgress(ls).tell
