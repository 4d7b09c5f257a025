"""The documents' close callback of a connection that never sent `initialize` (its server was
built by an earlier message; pygls has no workspace for it). Found by a heap walk of the daemon
after the fuzz: it raised RuntimeError, and since it runs first among the connection's close
callbacks (lsp/handlers/workspace.py's `connect` registers it as the server is built), the others
(unwatch_all, leave_workspaces) did not run."""

from __future__ import annotations

from typing import Any

from tokend.lsp.documents import close_all
from tokend.service.workspace.documents import OpenDocuments


class _NeverInitialized:
    service: Any = None
    documents = OpenDocuments()  # nothing opened: didOpen is dropped before initialize

    @property
    def workspace(self) -> Any:
        raise RuntimeError("The workspace is not available - has the server been initialized?")


def test_close_all_of_a_connection_that_never_initialized_does_nothing() -> None:
    close_all(_NeverInitialized())  # type: ignore[arg-type]
