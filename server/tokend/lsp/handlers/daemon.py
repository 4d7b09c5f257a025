"""daemon/status: who is connected, which sessions are loaded, which workspaces (gopls's inspect);
the daemon's rate headroom when `[rate] tpm_limit` is set. Also where a connection hears of
spend limits: a `window/showMessage` warning when a session it watches reaches 80% or 100%."""

from __future__ import annotations

import weakref
from typing import Any

from lsprotocol import types

import tokend
from tokend.core.spend import SpendStatus
from tokend.lsp.server import TokendServer, rpc
from tokend.service.telemetry import start_telemetry
from tokend.service.usage import usage_of


def register(server: TokendServer) -> None:
    start_telemetry(server.service)  # once per service; off unless [telemetry] exporters
    _tell_spend_notices(server)

    @server.feature("daemon/status")
    @rpc
    def status(ls: TokendServer, params: Any) -> Any:
        result = dict(ls.host.status())
        result["version"] = tokend.__version__
        attached: dict[str, int] = {}
        for conn in result.get("connections", []):
            if conn.get("sessionId"):
                attached[conn["sessionId"]] = attached.get(conn["sessionId"], 0) + 1
        result["sessions"] = [
            {
                "sessionId": s.session_id,
                "model": s.model,
                "usedTokens": s.used_tokens,
                "usedPercentage": s.used_percentage,
                "version": s.version,
                "connections": attached.get(s.session_id, 0),
            }
            for s in ls.service.loaded_snapshots()
        ]
        result["workspaces"] = sorted(ls.service.loaded_workspaces())
        rate = usage_of(ls.service).rate()
        if rate.tpm_limit is not None:
            result["rate"] = {
                "tokensPerMinute": rate.tokens_per_minute,
                "tpmLimit": rate.tpm_limit,
                "headroomTokens": rate.headroom_tokens,
                "usedPercentage": rate.used_percentage,
            }
        return result


def _tell_spend_notices(server: TokendServer) -> None:
    """Spend warnings to this connection for the sessions it watches. Held by a weak
    reference: a closed connection's server is not kept alive, and stops listening."""
    ref = weakref.ref(server)
    monitor = usage_of(server.service)

    def notice(session_id: str, status: SpendStatus) -> None:
        ls = ref()
        if ls is None:
            unsubscribe()
            return
        if session_id != ls.attached_session and not ls.watches(session_id):
            return
        kind = types.MessageType.Error if status.level == "reached" else types.MessageType.Warning
        ls.window_show_message(types.ShowMessageParams(kind, f"tokend: {status.message()}"))

    unsubscribe = monitor.subscribe_notices(notice)
