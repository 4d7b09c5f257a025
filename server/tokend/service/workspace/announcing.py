"""Where a workspace's changes go, on the event loop: its figures to the listeners
(connections, which send workspace/didChangeFileTokens) and to the session hooks (a new
snapshot, budget/didChange), its notices to the connections, editors' buffer events to the
editor hooks. A base of Workspaces (service/workspace/registry.py), whose tables it shares.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from tokend.service.workspace.figures import FileFigure
from tokend.service.workspace.index import WorkspaceIndex

log = logging.getLogger(__name__)

FiguresListener = Callable[[str, list[FileFigure]], None]
Notice = Callable[[str], None]
# (index, path, the buffer's text or None, "open" | "change" | "save" | "close"), on the loop
EditorHook = Callable[[WorkspaceIndex, str, str | None, str], None]


class Announcing:
    """Listeners and notices per workspace, the hooks told of changes, and the loop they run on."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[FiguresListener]] = {}
        self._notices: dict[str, list[Notice]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.session_hooks: list[Callable[[WorkspaceIndex, set[str]], None]] = []
        self.editor_hooks: list[EditorHook] = []

    def key(self, uri: str) -> str:
        raise NotImplementedError

    def _remember_loop(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass

    def _on_loop(self, fn: Callable[..., None]) -> Callable[..., None]:
        def call(*args: object) -> None:
            loop = self._loop
            if loop is None or loop.is_closed():
                return
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop closed meanwhile: the process is stopping
                pass

        return call

    def announce(
        self,
        index: WorkspaceIndex,
        changed: Iterable[str],
        figures: list[FileFigure] | None = None,
    ) -> None:
        """Tell listeners and sessions that the figures of `changed` moved (on the loop);
        `figures`: theirs, when the caller has them (made off the loop)."""
        paths = sorted(set(changed))
        if figures is None:
            figures = index.figures(paths, None, None)
        for listener in list(self._listeners.get(index.uri, ())):
            try:
                listener(index.uri, figures)
            except Exception:
                log.exception("a file-figures listener failed")
        for hook in self.session_hooks:
            try:
                hook(index, set(paths))
            except Exception:
                log.exception("updating sessions after a file change failed")

    def editor_event(self, index: WorkspaceIndex, rel: str, text: str | None, kind: str) -> None:
        """An editor opened, changed, saved or closed `rel` (its buffer's text, when known)."""
        for hook in list(self.editor_hooks):
            try:
                hook(index, rel, text, kind)
            except Exception:
                log.exception("an editor hook failed for %s", rel)

    def subscribe(self, uri: str, listener: FiguresListener, notice: Notice) -> Callable[[], None]:
        key = self.key(uri)
        self._listeners.setdefault(key, []).append(listener)
        self._notices.setdefault(key, []).append(notice)

        def unsubscribe() -> None:
            for table, item in ((self._listeners, listener), (self._notices, notice)):
                if item in table.get(key, []):
                    table[key].remove(item)  # type: ignore[arg-type]

        return unsubscribe

    def _notice(self, index: WorkspaceIndex, message: str) -> None:
        log.warning("%s", message)
        for notice in list(self._notices.get(index.uri, ())):
            self._on_loop(notice)(message)
