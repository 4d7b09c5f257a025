"""tokend.client: tokend for Python agents, without writing the protocol's plumbing.

`Client` (blocking) and `AsyncClient` (asyncio) find the user's daemon or start it exactly as
`tokend lsp` does, speak its framing, send typed requests (`create_session`, `append`,
`assemble`, `snapshot`, `compact`, or any method with `request`), pass notifications to handlers
(`on("budget/didChange", ...)`), and retry `append` with its `message.id` after a lost
connection. An agent's connection follows only the sessions it creates or works in.
protocol.md (For agent authors) has the loop; its usage table maps providers' usage fields.
"""

from tokend.client.aio import AsyncClient
from tokend.client.calls import ConnectionLost, RpcError
from tokend.client.sync import Client

__all__ = ["AsyncClient", "Client", "ConnectionLost", "RpcError"]
