"""The live context's messages and what each costs, as immutable values whose append is O(1).

A session appends one message at a time to its newest version. A `MessageLog` version sees the
first `n` entries of storage it shares with the versions it grew from: appending to the newest
version adds an entry in place and returns a view one longer (older versions still see their
`n`), so an append costs the same at message 50,000 as at message 100. Appending to any other
version (a change that was computed and not kept) copies its entries first. Its running figures
(the tokens of all its messages, the tool results a gate kept out) move with each append, so
the gauge never walks the history. Pure: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import overload

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


class _Entries:
    """Storage shared by the versions of a log (each sees a prefix of it); a lazy one is
    filled by its loader when first read."""

    __slots__ = ("_load", "_messages", "_positions", "_tokens", "lock")

    def __init__(self, load: Load | None = None) -> None:
        self._messages: list[Message] = []
        self._tokens: list[int] = []
        self._positions: dict[str, int] = {}  # message id -> its index (first one kept)
        self._load = load
        self.lock = threading.RLock()  # one version grows (or fills) the storage at a time

    def _filled(self) -> _Entries:
        if self._load is not None:
            with self.lock:
                if self._load is not None:
                    for message, tokens in self._load():
                        self.add(message, tokens)
                    self._load = None
        return self

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
        self._positions.setdefault(message.id, len(self._messages))
        self._messages.append(message)
        self._tokens.append(tokens)


class MessageLog:
    """Messages, oldest first, with their tokens as sent (framing, placeholders included)."""

    __slots__ = ("_entries", "_n", "gated", "messages", "tokens", "total_tokens")

    def __init__(self, entries: _Entries, n: int, total_tokens: int, gated: GatedTally) -> None:
        self._entries, self._n = entries, n
        self.total_tokens = total_tokens  # the sum of every message's tokens
        self.gated = gated
        self.messages = LogMessages(entries, n)
        self.tokens = LogTokens(entries, n)

    @classmethod
    def lazy(cls, n: int, total_tokens: int, gated: GatedTally, load: Load) -> MessageLog:
        """A log of `n` messages whose figures are known and whose bodies `load` gives (the
        first `n` of what it returns) when first read."""
        return cls(_Entries(load), n, total_tokens, gated)

    @classmethod
    def of(cls, messages: Iterable[Message], tokens: Mapping[str, int]) -> MessageLog:
        """A log of `messages`, each with its `tokens` (0 when absent)."""
        log = cls(_Entries(), 0, 0, GatedTally())
        for message in messages:
            log = log.appended(message, tokens.get(message.id, 0))
        return log

    def appended(self, message: Message, tokens: int) -> MessageLog:
        """This log and `message` after it: O(1) when this is the newest version."""
        entries = self._entries
        with entries.lock:
            if len(entries.messages) == self._n:
                entries.add(message, tokens)
            else:  # another version grew from this one: copy what this one sees
                entries = self._copy()
                entries.add(message, tokens)
        return MessageLog(
            entries, self._n + 1, self.total_tokens + tokens, self.gated.plus(message)
        )

    def _copy(self) -> _Entries:
        copy, entries = _Entries(), self._entries
        for index in range(self._n):
            copy.add(entries.messages[index], entries.tokens[index])
        return copy


class LogMessages(Sequence[Message]):
    """A log version's messages, read-only."""

    __slots__ = ("_entries", "_n")

    def __init__(self, entries: _Entries, n: int) -> None:
        self._entries, self._n = entries, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            return tuple(self._entries.messages[start:stop:step])
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("message index out of range")
        return self._entries.messages[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._entries.messages, self._n)

    def __reversed__(self) -> Iterator[Message]:
        messages = self._entries.messages
        return (messages[i] for i in range(self._n - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LogMessages | tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogMessages({list(self)!r})"


class LogTokens(Mapping[str, int]):
    """A log version's tokens by message id, read-only."""

    __slots__ = ("_entries", "_n")

    def __init__(self, entries: _Entries, n: int) -> None:
        self._entries, self._n = entries, n

    def __getitem__(self, message_id: str) -> int:
        index = self._entries.positions.get(message_id)
        if index is None or index >= self._n:
            raise KeyError(message_id)
        return self._entries.tokens[index]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return (m.id for m in islice(self._entries.messages, self._n))

    def __repr__(self) -> str:
        return f"LogTokens({dict(self)!r})"
