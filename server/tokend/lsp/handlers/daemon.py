"""daemon/status: who is connected, which sessions are loaded, which workspaces (gopls's inspect);
the daemon's rate headroom when `[rate] tpm_limit` is set. (Spend notices: lsp/notices.py.)"""

from __future__ import annotations

from typing import Any

import tokend
from tokend.lsp.server import TokendServer, rpc


def register(server: TokendServer) -> None:
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
            for s in ls.service.sessions.loaded_snapshots()
        ]
        result["workspaces"] = sorted(ls.service.sessions.loaded_workspaces())
        rate = ls.app.usage.rate()
        if rate.tpm_limit is not None:
            result["rate"] = {
                "tokensPerMinute": rate.tokens_per_minute,
                "tpmLimit": rate.tpm_limit,
                "headroomTokens": rate.headroom_tokens,
                "usedPercentage": rate.used_percentage,
            }
        return result
