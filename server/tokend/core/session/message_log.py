"""The live context's messages and what each costs, as immutable values whose append is O(1).

A session appends one message at a time to its newest version. A `MessageLog` version sees the
first `n` entries of storage it shares with the versions it grew from: appending to the newest
version adds an entry in place and returns a view one longer (older versions still see their
`n`), so an append costs the same at message 50,000 as at message 100. Appending to any other
version (a change that was computed and not kept) copies its entries first. Its running figures
(the tokens of all its messages, the tool results a gate kept out) move with each append, so
the gauge never walks the history. A change to messages in the log (a grown reply, a prune, an
exact count) costs what changed (`replaced`). A lazy log appends without reading its bodies.
Pure: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

from tokend.core.session.log_views import LogMessages, LogTokens, Over
from tokend.core.types import Message, ToolResultPart

Load = Callable[[], Iterable[tuple[Message, int]]]  # a lazy log's messages and their tokens


@dataclass(frozen=True, slots=True)
class GatedTally:
    """Tool results a gate kept out of the model's view: how many, their original characters."""

    count: int = 0
    chars: int = 0

    def plus(self, message: Message) -> GatedTally:
        count, chars = self.count, self.chars
        for sp in message.parts:
            part = sp.part
            if isinstance(part, ToolResultPart) and part.gate is not None:
                count += 1
                chars += part.original_chars or 0
        return GatedTally(count, chars) if count != self.count else self

    def minus(self, message: Message) -> GatedTally:
        less = GatedTally().plus(message)
        return GatedTally(self.count - less.count, self.chars - less.chars) if less.count else self


# A log version keeps the messages replaced since its storage was copied beside it; past this
# many, the next replacement copies the storage with them in place (amortized: a few entries
# copied per replaced message, whatever the log's length).
OVERRIDES_MAX = 256


class _Entries:
    """Storage shared by the versions of a log (each sees a prefix of it); a lazy one is
    filled by its loader when first read, what was appended meanwhile kept after it."""

    __slots__ = ("_load", "_messages", "_positions", "_stored", "_tail", "_tokens", "lock")

    def __init__(self, load: Load | None = None, stored: int = 0) -> None:
        self._messages: list[Message] = []
        self._tokens: list[int] = []
        self._positions: dict[str, int] = {}  # message id -> its index (first one kept)
        self._load = load
        self._stored = stored if load is not None else 0  # the first ones the loader gives
        self._tail: list[tuple[Message, int]] = []  # appended before the loader ran
        self.lock = threading.RLock()  # one version grows (or fills) the storage at a time

    def __len__(self) -> int:
        if self._load is not None:
            return self._stored + len(self._tail)
        return len(self._messages)

    @property
    def filled(self) -> bool:
        return self._load is None

    def _filled(self) -> _Entries:
        load = self._load
        if load is not None:  # read without the lock: an append goes on meanwhile
            read = list(islice(load(), self._stored))
            with self.lock:
                if self._load is not None:
                    for message, tokens in (*read, *self._tail):
                        self._add(message, tokens)
                    self._tail, self._load = [], None
        return self

    def tail(self, n: int) -> list[tuple[Message, int]]:
        """What an unfilled storage holds in memory of its first `n` (appended since)."""
        return self._tail[: max(0, n - self._stored)]

    def get(self, index: int) -> tuple[Message, int]:
        """The entry at `index`: one appended since a lazy load is read without the bodies."""
        tail, at = self._tail, index - self._stored
        if self._load is not None and 0 <= at < len(tail):
            return tail[at]
        return self.messages[index], self.tokens[index]

    def find(self, message_id: str, n: int, start: int = 0) -> int | None:
        """Where `message_id` is among entries `start` to `n` (None: not there; a log's ids are
        its messages' own, one each); the bodies are not read when the entries looked at were
        all appended since a lazy load."""
        if self._load is not None:
            for at, (message, _) in enumerate(self.tail(n)):
                if message.id == message_id and self._stored + at >= start:
                    return self._stored + at
            if start >= self._stored:
                return None
        index = self.positions.get(message_id)
        return index if index is not None and start <= index < n else None

    def token_of(self, message_id: str, n: int) -> int | None:
        """The tokens of `message_id` among the first `n` entries (None: not there)."""
        if self._load is None:  # the common case, kept short: an assembly asks it per message
            index = self._positions.get(message_id)
            return self._tokens[index] if index is not None and index < n else None
        index = self.find(message_id, n)
        return None if index is None else self.get(index)[1]

    @property
    def messages(self) -> list[Message]:
        return self._filled()._messages

    @property
    def tokens(self) -> list[int]:
        return self._filled()._tokens

    @property
    def positions(self) -> dict[str, int]:
        return self._filled()._positions

    def add(self, message: Message, tokens: int) -> None:
        if self._load is not None:
            self._tail.append((message, tokens))
            return
        self._add(message, tokens)

    def _add(self, message: Message, tokens: int) -> None:
        self._positions.setdefault(message.id, len(self._messages))
        self._messages.append(message)
        self._tokens.append(tokens)


class MessageLog:
    """Messages, oldest first, with their tokens as sent (framing, placeholders included)."""

    __slots__ = ("_entries", "_n", "_over", "gated", "messages", "tokens", "total_tokens")

    def __init__(
        self,
        entries: _Entries,
        n: int,
        total_tokens: int,
        gated: GatedTally,
        over: Over | None = None,
    ) -> None:
        self._entries, self._n = entries, n
        self._over: Over = over or {}  # never changed once made: versions share it
        self.total_tokens = total_tokens  # the sum of every message's tokens
        self.gated = gated
        self.messages = LogMessages(entries, n, self._over)
        self.tokens = LogTokens(entries, n, self._over)

    @classmethod
    def lazy(cls, n: int, total_tokens: int, gated: GatedTally, load: Load) -> MessageLog:
        """A log of `n` messages whose figures are known and whose bodies `load` gives (the
        first `n` of what it returns) when first read."""
        return cls(_Entries(load, n), n, total_tokens, gated)

    @classmethod
    def of(cls, messages: Iterable[Message], tokens: Mapping[str, int]) -> MessageLog:
        """A log of `messages`, each with its `tokens` (0 when absent)."""
        log = cls(_Entries(), 0, 0, GatedTally())
        for message in messages:
            log = log.appended(message, tokens.get(message.id, 0))
        return log

    @property
    def filled(self) -> bool:
        """Every body is in memory (a lazy log's were read)."""
        return self._entries.filled

    def read(self) -> None:
        """Read a lazy log's bodies now (nothing when they are in memory)."""
        self._entries._filled()

    def appended(self, message: Message, tokens: int) -> MessageLog:
        """This log and `message` after it: O(1) when this is the newest version (a lazy
        log's bodies are not read for it)."""
        entries = self._entries
        with entries.lock:
            if len(entries) == self._n:
                entries.add(message, tokens)
            else:  # another version grew from this one: copy what this one sees
                entries = self._copy()
                entries.add(message, tokens)
        return MessageLog(
            entries, self._n + 1, self.total_tokens + tokens, self.gated.plus(message), self._over
        )

    def replaced(self, changed: Mapping[int, tuple[Message, int]]) -> MessageLog:
        """This log with the message at each index of `changed` replaced by one of the same
        id (with its tokens): it costs what changed (and, now and then, a copy: OVERRIDES_MAX)."""
        total, gated = self.total_tokens, self.gated
        for index, (message, tokens) in changed.items():
            if not 0 <= index < self._n:
                raise IndexError("message index out of range")
            old, old_tokens = self.at(index)
            if old.id != message.id:
                raise ValueError(f"message {message.id} would replace {old.id}")
            total += tokens - old_tokens
            gated = gated.minus(old).plus(message)
        over = {**self._over, **changed}
        if len(over) <= OVERRIDES_MAX:
            return MessageLog(self._entries, self._n, total, gated, over)
        copy = MessageLog(self._entries, self._n, total, gated, over)._copy()
        return MessageLog(copy, self._n, total, gated)

    def at(self, index: int) -> tuple[Message, int]:
        """The message at `index` (0 <= index < len) and its tokens."""
        got = self._over.get(index)
        return got if got is not None else self._entries.get(index)

    def index_of(self, message_id: str, start: int = 0) -> int | None:
        """Where the message `message_id` is in this log, from `start` on (None: not there);
        O(1), or the messages appended since a lazy load when `start` is among them."""
        return self._entries.find(message_id, self._n, start)

    def recent(self) -> Iterator[Message]:
        """Newest first, what is in memory without reading a lazy log's bodies (all of them
        once read; before, those appended since it was loaded)."""
        entries = self._entries
        if entries.filled:
            return reversed(self.messages)
        return (message for message, _ in reversed(entries.tail(self._n)))

    def _copy(self) -> _Entries:
        copy = _Entries()
        for index in range(self._n):
            copy.add(*self.at(index))
        return copy
