"""The seams: `typing.Protocol`s that adapters implement and tests fake in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from tokend.core.commit import SessionCommit
from tokend.core.types import ListedSession, Message, SessionInfo, StoredMessage


class TokenCounter(Protocol):
    """Counts tokens of plain text with one tokenizer (or one estimator)."""

    @property
    def name(self) -> str:
        """Stable id of the tokenizer, e.g. "o200k_base", "cl100k_base", "estimate"."""
        ...

    @property
    def exact(self) -> bool:
        """True when counts come from the model's real tokenizer."""
        ...

    def count(self, text: str) -> int: ...


class CountCache(Protocol):
    """Content-hash -> token count, keyed by "<counter name>:<sha256 hex of the UTF-8 text>"."""

    def get_many(self, keys: Sequence[str]) -> dict[str, int]: ...

    def put_many(self, counts: Mapping[str, int]) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime: ...


class Summarizer(Protocol):
    """Writes the summary of the messages a compaction takes out of the context.

    `summarize` gets the summarized messages (a previous summary first, to be merged, not
    summarized again), the caller's instructions and the target in tokens; it returns the
    summary text and the structured digest kept with it (core.compaction.summary), or raises to let the
    caller fall back to the extractive summarizer. It runs in a worker thread."""

    @property
    def name(self) -> str: ...

    def summarize(
        self, messages: Sequence[Message], target_tokens: int, instructions: str | None
    ) -> tuple[str, dict[str, Any] | None]: ...


OnRemoteChange = Callable[[str | None, int], None]


class RemoteChanges(Protocol):
    """Changes other processes (daemons sharing the database) commit, as they commit."""

    def listen(self, on_change: OnRemoteChange) -> Callable[[], None]:
        """Call `on_change(session_id, version)` from a thread for each change another process
        commits, and `on_change(None, 0)` when changes may have been missed (a reconnect);
        returns the function that stops listening."""
        ...


class HeldChange(Protocol):
    def commit_change(self, commit: SessionCommit) -> None:
        """Store.commit_change, committed in the holding transaction."""
        ...


class SessionListings(Protocol):
    """Reads of many sessions' rows, each with only the columns its caller uses (a listing of
    1,000 sessions that read every column and parsed the JSON of four was 1.2x slower than the
    tree before issue 18's typed persistence). All workspaces when `workspace_uri` is None."""

    def listed(
        self, workspace_uri: str | None = None, *, deleted: bool = False
    ) -> list[ListedSession]:
        """What a listing shows: sessions not deleted, newest updated first; with `deleted`,
        the soft-deleted ones, most recently deleted first."""
        ...

    def newest(self, workspace_uri: str) -> str | None:
        """The id of the workspace's session updated last (its active session); None: none."""
        ...

    def transcript_cursors(self) -> list[tuple[str, str | None, Mapping[str, Any]]]:
        """(id, workspace URI, transcript cursor) of each session a transcript feeds, newest
        updated first."""
        ...

    def updated_since(self, since: datetime) -> list[tuple[str, str | None]]:
        """(id, workspace URI) of the sessions not deleted updated at `since` or later."""
        ...


class SessionMessages(Protocol):
    """Reads of the stored messages (with their parts) and of the gated tool outputs."""

    def load_messages(self, session_id: str, *, including_deleted: bool = False) -> list[Message]:
        """The live context, oldest first: the live summary (if any) first, then the messages
        no summary covers and no rewind took out. Pruned parts carry compacted_at. A deleted
        session's only `including_deleted` (SessionNotFound otherwise)."""
        ...

    def load_all_messages(
        self, session_id: str, *, including_deleted: bool = False
    ) -> list[Message]:
        """Every message ever appended, oldest first (nothing is ever deleted); those out of
        the live context carry compacted_at and compacted_by."""
        ...

    def load_replies(self, session_id: str) -> list[Message]:
        """Every message of every window that carries a provider's usage, oldest first, each
        read without its parts (`parts` is empty): the calls a session made, not its text."""
        ...

    def load_since(self, session_id: str, version: int) -> tuple[SessionInfo, list[Message]]:
        """The session as stored now and the messages appended after `version`, oldest first,
        from one snapshot."""
        ...

    def find_message(self, message_id: str) -> StoredMessage | None:
        """Where a stored message is and what its append answered, or None."""
        ...

    def read_tool_output(
        self, session_id: str, ref: str, offset: int, length: int
    ) -> tuple[str, int] | None:
        """(characters [offset, offset + length) of a gated tool output, its length in
        characters), or None when the session has no output `ref`."""
        ...


class SessionParts(Protocol):
    """Marks kept on stored parts, outside a session change: a prune's time, a token count."""

    def mark_parts_compacted(self, part_ids: Iterable[str], at: datetime) -> None: ...

    def set_part_tokens(self, counts: Mapping[str, int]) -> None:
        """Cache token counts on parts (part id -> tokens)."""
        ...


class StoredCalibration(Protocol):
    """What the estimates learnt from providers' figures (core.counting.calibration), kept
    between runs and shared by the daemons on one store."""

    def load_calibration(self) -> dict[str, Any]:
        """The persisted calibration state (opaque JSON object); {} when none."""
        ...

    def save_calibration(self, state: Mapping[str, Any]) -> None: ...


class Store(Protocol):
    """Durable sessions, messages and parts. Every write is atomic: all of it or nothing.

    The reads of one kind and the marks kept outside a change each have a role of their own,
    reached as a property (`listings`, `messages`, `parts`, `calibration`): a caller that
    needs one role alone is handed it alone."""

    @property
    def changes(self) -> RemoteChanges | None:
        """Other processes' changes as they commit; None when no other process shares the
        store in real time."""
        ...

    def create_session(self, info: SessionInfo) -> None: ...

    def get_session(self, session_id: str) -> SessionInfo | None:
        """None when absent or soft-deleted."""
        ...

    @property
    def listings(self) -> SessionListings:
        """The sessions' rows read narrowly, each read with only the columns its caller uses."""
        ...

    @property
    def messages(self) -> SessionMessages:
        """The sessions' messages and gated tool outputs, read."""
        ...

    @property
    def parts(self) -> SessionParts:
        """The marks kept on the messages' parts (prune times, token counts)."""
        ...

    @property
    def calibration(self) -> StoredCalibration:
        """The estimates' calibration, loaded at start and saved as it learns."""
        ...

    def append_message(self, message: Message) -> None:
        """Insert the message with all its parts in one transaction; bumps the session's updated_at."""
        ...

    def commit_change(self, session_id: str, commit: SessionCommit) -> None:
        """One session change in one transaction, all of it or nothing (core.commit says what
        each field stores; the session's owner is the only caller). A `commit.version` the
        store no longer has raises ChangedElsewhere (with the stored version); a `message`
        whose id is already stored raises AlreadyStored."""
        ...

    def commit_changes(self, session_id: str, changes: Sequence[SessionCommit]) -> None:
        """Several changes of one session, in order, in ONE transaction: all or nothing (as
        commit_change for each)."""
        ...

    def hold(self, session_id: str) -> AbstractContextManager[HeldChange]:
        """A transaction holding the session's lock until it ends (no other process changes
        the session meanwhile); its `commit_change` commits in it."""
        ...

    def fork_session(self, child: SessionInfo, through_message_id: str | None = None) -> int:
        """Create `child` (parent_id set) with copies of the parent's messages up to
        `through_message_id`; returns how many were copied."""
        ...

    def close(self) -> None: ...

    def get_session_including_deleted(self, session_id: str) -> SessionInfo | None:
        """The session, soft-deleted or not (deleted_at tells); None only for an unknown id."""
        ...


class ModelWriter(Protocol):
    """Writes the narrative for a prompt, or raises SummaryFailed. Runs on the event loop
    (never blocking it, never in the service's workers): service.compaction.summarizers' model-backed steps."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None:
        """The catalog name of the model writing (its window bounds a request); None when
        unknown (the client)."""

    async def write(self, prompt: str, max_tokens: int) -> str: ...


class HttpWriterFactory(Protocol):
    """Builds the writer of one model of an `openai` / `anthropic` chain step (production:
    adapters.model_http.HttpWriter, on httpx, handed over by the composition root)."""

    def __call__(
        self, provider: str, base_url: str, model: str, key_env: str, timeout_s: float
    ) -> ModelWriter: ...
