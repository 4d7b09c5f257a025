"""Errors a request can fail with. Each has a stable JSON-RPC code listed in protocol.md.

tokend's own codes lie in -33099…-33000, outside JSON-RPC's reserved -32099…-32000 and LSP's
-32899…-32800; the codes it shares with JSON-RPC (InvalidParams -32602) keep their meaning."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokend.core.types import StoredMessage


class TokendError(Exception):
    """Base: a request failed for a reason the user can act on."""

    code: int = -33000
    name: str = "TokendError"

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(TokendError):
    code = -32602
    name = "InvalidParams"


class Stopping(TokendError):
    """The daemon (or the stdio server) is stopping: work the request waited for (a first
    index, the repo map's tags) will not finish in this process. RequestCancelled's code: the
    server cancelled it, nothing was written; the client may retry once a new server runs."""

    code = -32800
    name = "RequestCancelled"


class IndexFailed(TokendError):
    """A workspace's first index failed (its tags or what its files say are not all read): its
    repo map is refused, not made from part of the tree. InternalError's code."""

    code = -32603
    name = "InternalError"

    @classmethod
    def of(cls, root: str, why: str) -> IndexFailed:
        return cls(
            f"the repo map of {root} cannot be made: its first index failed ({why}); restarting "
            "tokend (`tokend stop`) indexes it again; tokend's log has the details"
        )


class SessionNotFound(TokendError):
    code = -33001
    name = "SessionNotFound"


class UnknownModel(TokendError):
    code = -33002
    name = "UnknownModel"


class ContextOverflow(TokendError):
    """The assembled context does not fit; data = {total, limit, suggestions}."""

    code = -33003
    name = "ContextOverflow"


class TokenizerUnavailable(TokendError):
    code = -33004
    name = "TokenizerUnavailable"


class MessageTooLarge(TokendError):
    code = -33005
    name = "MessageTooLarge"


class VersionConflict(TokendError):
    """ifVersion was stale; data = {currentVersion}."""

    code = -33006
    name = "VersionConflict"


class ChangedElsewhere(VersionConflict):
    """A change was computed on a version another process (a daemon sharing the database)
    has moved past; data = {currentVersion}. The owner reloads the session and retries, or
    answers VersionConflict when the caller asked for a version."""


class AlreadyStored(Exception):
    """A message with the client-chosen id is already stored (an append retried); not an error
    to the client, who gets the first append's answer."""

    def __init__(self, message_id: str, stored: StoredMessage) -> None:
        super().__init__(f"message {message_id} is already stored")
        self.message_id = message_id
        self.stored = stored


class SummaryFailed(Exception):
    """A model-backed summarizer gave no usable summary; `reason` says why, in a few words (the
    compaction's chain reports it and moves to its next step: never a JSON-RPC error)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Unauthorized(TokendError):
    code = -33007
    name = "Unauthorized"


class StoreError(TokendError):
    code = -33010
    name = "StoreError"


class RequestTooLarge(TokendError):
    """A request's frame is over the daemon's byte limit (64 MiB): skipped, nothing of it ran.

    data = {bytes, limit}. The connection stays open."""

    code = -33011
    name = "RequestTooLarge"


class ReplyTooLarge(TokendError):
    """The reply would be over the byte limit of one reply (32 MiB); it was not sent.

    data = {bytes, limit}. The connection stays open."""

    code = -33012
    name = "ReplyTooLarge"


ALL_ERRORS: tuple[type[TokendError], ...] = (
    InvalidParams,
    SessionNotFound,
    UnknownModel,
    ContextOverflow,
    TokenizerUnavailable,
    MessageTooLarge,
    VersionConflict,
    Unauthorized,
    StoreError,
    RequestTooLarge,
    ReplyTooLarge,
)


class SpendLimitReached(TokendError):
    """A spend limit is reached and `[spend] on_limit = "refuse"`: context/assemble refused.

    data = {limit, spent, scope}: US dollars; scope "session" | "workspace" | "user"."""

    code = -33020
    name = "SpendLimitReached"


ALL_ERRORS = (*ALL_ERRORS, SpendLimitReached)
