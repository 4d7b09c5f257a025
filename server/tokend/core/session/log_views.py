"""A message log version's read-only views (core.session.message_log): its messages in order and its
tokens by message id, each seeing the version's first `n` entries of the shared storage with
the messages the version replaced in their place. Pure."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, overload

from tokend.core.types import Message

Over = dict[int, tuple[Message, int]]  # index -> the message (and its tokens) seen there


class Entries(Protocol):
    """What the views read of a log's shared storage (core.session.message_log's)."""

    @property
    def filled(self) -> bool: ...

    @property
    def messages(self) -> list[Message]: ...

    def get(self, index: int) -> tuple[Message, int]: ...

    def find(self, message_id: str, n: int, start: int = 0) -> int | None: ...

    def token_of(self, message_id: str, n: int) -> int | None: ...


class LogMessages(Sequence[Message]):
    """A log version's messages, read-only."""

    __slots__ = ("_entries", "_n", "_over")

    def __init__(self, entries: Entries, n: int, over: Over) -> None:
        self._entries, self._n, self._over = entries, n, over

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            if not self._over:
                return tuple(self._entries.messages[start:stop:step])
            return tuple(self[i] for i in range(start, stop, step))
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("message index out of range")
        got = self._over.get(index)
        return (got if got is not None else self._entries.get(index))[0]

    def __iter__(self) -> Iterator[Message]:
        messages = islice(self._entries.messages, self._n)
        if not self._over:
            return messages
        over = self._over
        return (over[i][0] if i in over else m for i, m in enumerate(messages))

    def __reversed__(self) -> Iterator[Message]:
        entries, over = self._entries, self._over
        for i in range(self._n - 1, -1, -1):  # a lazy log's bodies read when first reached
            got = over.get(i)
            if got is None and entries.filled:
                yield entries.messages[i]
            else:
                yield (got if got is not None else entries.get(i))[0]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LogMessages | tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogMessages({list(self)!r})"


class LogTokens(Mapping[str, int]):
    """A log version's tokens by message id, read-only."""

    __slots__ = ("_entries", "_n", "_over")

    def __init__(self, entries: Entries, n: int, over: Over) -> None:
        self._entries, self._n, self._over = entries, n, over

    def __getitem__(self, message_id: str) -> int:
        got = self.get(message_id)
        if got is None:
            raise KeyError(message_id)
        return int(got)

    def get(self, message_id: str, default: Any = None, /) -> Any:
        if not self._over:
            found = self._entries.token_of(message_id, self._n)
            return default if found is None else found
        index = self._entries.find(message_id, self._n)
        if index is None:
            return default
        got = self._over.get(index)
        return (got if got is not None else self._entries.get(index))[1]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return (m.id for m in islice(self._entries.messages, self._n))

    def __repr__(self) -> str:
        return f"LogTokens({dict(self)!r})"
