"""What the app tells a connection unasked: spend limits reached by the sessions it watches
(window/showMessage) and restores a kill interrupted, settled at start (window/logMessage).

create_server subscribes every server it builds; the subscriptions hold the server weakly, so
a closed connection's server is not kept alive, and stops listening."""

from __future__ import annotations

import weakref
from typing import Protocol

from lsprotocol import types

from tokend.core.usage.spend import SpendStatus
from tokend.service.checkpoints import restore_journal
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.usage.monitor import UsageMonitor


class Listener(Protocol):
    """What of a connection's server (lsp/server.py's TokendServer) the notices use."""

    attached_session: str | None

    def watches(self, session_id: str) -> bool: ...

    def window_show_message(self, params: types.ShowMessageParams) -> None: ...

    def window_log_message(self, params: types.LogMessageParams) -> None: ...


def hear_spend_notices(server: Listener, usage: UsageMonitor) -> None:
    """Spend warnings to this connection for the sessions it watches (80% Warning, 100%
    Error)."""
    ref = weakref.ref(server)

    def notice(session_id: str, status: SpendStatus) -> None:
        ls = ref()
        if ls is None:
            unsubscribe()
            return
        if session_id != ls.attached_session and not ls.watches(session_id):
            return
        kind = types.MessageType.Error if status.level == "reached" else types.MessageType.Warning
        ls.window_show_message(types.ShowMessageParams(kind, f"tokend: {status.message()}"))

    unsubscribe = usage.subscribe_notices(notice)


def hear_settled_restores(server: Listener, checkpoints: Checkpoints) -> None:
    """Every restore settled at start from now on, as a window/logMessage warning."""
    restore_journal.listen(checkpoints, server, _tell)


def _tell(server: Listener, text: str) -> None:
    server.window_log_message(types.LogMessageParams(types.MessageType.Warning, text))
