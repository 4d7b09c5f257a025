"""The transcripts feature: follow/start, follow/list, follow/stop: the daemon tails agents'
transcripts into sessions.

The connection that starts a follower follows (is attached to) the transcript's session as soon
as it exists, so `budget/didChange` brings it the live gauge; for a followed folder, only the
sessions of its own workspace (any, for a client that named none).
"""

from __future__ import annotations

from collections.abc import Callable

from tokend.core.errors import TokendError
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features
from tokend.lsp.server import BUDGET_DID_CHANGE, TokendServer
from tokend.lsp.wire import NoParams, to_wire
from tokend.lsp.wire.budget import BudgetDidChangeParams
from tokend.lsp.wire.transcripts import (
    FollowedTranscriptWire,
    FollowerWire,
    FollowListResult,
    FollowStartParams,
    FollowStopParams,
)
from tokend.service.transcripts.followers import FollowerStatus
from tokend.service.transcripts.tail import TailStatus


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


def list_followers(ls: TokendServer, params: NoParams) -> FollowListResult:
    return FollowListResult([to_wire_follower(f) for f in ls.app.followers.list()])


def stop(ls: TokendServer, params: FollowStopParams) -> FollowerWire:
    return to_wire_follower(ls.app.followers.stop(params.follower_id))


def _attacher(ls: TokendServer, *, folder: bool) -> Callable[[str, TailStatus], bool]:
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
            change = BudgetDidChangeParams(snapshot.session_id, to_wire_snapshot(snapshot))
            ls.protocol.notify(BUDGET_DID_CHANGE, to_wire(change))
        except TokendError:
            return True  # the session went; a later one may come
        except (RuntimeError, AttributeError):
            return False  # the connection did
        return True

    return attach


FEATURES = features({"follow/start": start, "follow/list": list_followers, "follow/stop": stop})
