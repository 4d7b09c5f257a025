"""follow/start, follow/list, follow/stop: the daemon tails agents' transcripts into sessions.

The connection that starts a follower follows (is attached to) the transcript's session as soon
as it exists, so `budget/didChange` brings it the live gauge; for a followed folder, only the
sessions of its own workspace (any, for a client that named none).
"""

from __future__ import annotations

from typing import Any

import attrs

from tokend.core.errors import TokendError
from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features, register_features
from tokend.lsp.server import TokendServer
from tokend.service.followers import FollowerStatus
from tokend.service.tail import TailStatus


@attrs.frozen
class FollowStartParams:
    agent: str
    path: str | None = None
    workspace_uri: str | None = None


@attrs.frozen
class FollowStopParams:
    follower_id: str


@attrs.frozen
class FollowedTranscriptWire:
    path: str
    session_id: str | None
    workspace_uri: str | None
    records: int
    messages: int
    calls: int
    compactions: int
    error: str | None
    caught_up: bool


@attrs.frozen
class FollowerWire:
    follower_id: str
    agent: str
    path: str
    folder: bool
    transcripts: list[FollowedTranscriptWire]


def to_wire_follower(status: FollowerStatus) -> FollowerWire:
    transcripts = [
        FollowedTranscriptWire(
            t.path,
            t.session_id,
            t.workspace_uri,
            t.records,
            t.messages,
            t.calls,
            t.compactions,
            t.error,
            t.caught_up,
        )
        for t in status.transcripts
    ]
    return FollowerWire(status.follower_id, status.agent, status.path, status.folder, transcripts)


async def start(ls: TokendServer, params: FollowStartParams) -> FollowerWire:
    p = params
    status = await ls.app.followers.start(
        p.agent, p.path, p.workspace_uri, on_session=_attacher(ls, folder=p.path is None)
    )
    return to_wire_follower(status)


def stop(ls: TokendServer, params: FollowStopParams) -> FollowerWire:
    return to_wire_follower(ls.app.followers.stop(params.follower_id))


FEATURES = features({"follow/start": start, "follow/stop": stop})


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    register_features(server, FEATURES)

    @server.feature("follow/list")
    @rpc
    def list_followers(ls: TokendServer, params: Any) -> Any:
        followers = ls.app.followers.list()
        return {"followers": wire.to_wire([to_wire_follower(f) for f in followers])}


def _attacher(ls: TokendServer, *, folder: bool) -> Any:
    from tokend.lsp.server import BUDGET_DID_CHANGE

    """Attach `ls` to a followed transcript's session once it is known (and tell it the
    gauge); for a folder, only sessions of the connection's workspace."""

    def attach(follower_id: str, transcript: TailStatus) -> bool:
        """False once the connection has ended: the follower then forgets this listener."""
        if ls.ended:
            return False
        if transcript.session_id is None:
            return True
        if folder and ls.workspace_uri not in (None, transcript.workspace_uri):
            return True
        try:
            snapshot = ls.attach(transcript.session_id)
            change = {"sessionId": snapshot.session_id, "snapshot": to_wire_snapshot(snapshot)}
            ls.protocol.notify(BUDGET_DID_CHANGE, wire.to_wire(change))
        except TokendError:
            return True  # the session went; a later one may come
        except (RuntimeError, AttributeError):
            return False  # the connection did
        return True

    return attach
