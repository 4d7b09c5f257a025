"""The history's join kept from one assembly to the next (issue 22: a warm `context/assemble` of
10,000 messages spent most of its time joining the same 10,000 wire messages again).

A Joiner's state is its joined messages, the tool calls awaiting a result and its warnings; the
join of a history that starts with the messages joined last time (the very Message objects:
messages are immutable, a changed one is a new object) is that state as it was after them,
extended with the messages that follow. Kept only when the Joiner was in the same state before
the history (the same system message, examples, files and repo map, compared by value)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tokend.core.assembly.wire_formats import WireMessage
from tokend.core.assembly.wire_join import Joiner
from tokend.core.types import Message


@dataclass(frozen=True, slots=True)
class _JoinerState:
    messages: list[WireMessage]
    pending: dict[str, str]
    warnings: list[str]

    @classmethod
    def of(cls, joiner: Joiner) -> _JoinerState:
        return cls(list(joiner.messages), dict(joiner.pending), list(joiner.warnings))

    def matches(self, joiner: Joiner) -> bool:
        return (
            self.pending == joiner.pending
            and self.warnings == joiner.warnings
            and self.messages == joiner.messages
        )

    def restore(self, joiner: Joiner) -> None:
        """Put this state in `joiner` (copies: the Joiner changes its own)."""
        joiner.messages = list(self.messages)
        joiner.pending = dict(self.pending)
        joiner.warnings = list(self.warnings)


@dataclass(frozen=True, slots=True)
class _Joined:
    format: str
    before: _JoinerState  # the Joiner's state before the history
    history: list[Message]  # held, so that their ids stay theirs
    history_ids: list[int]
    after: _JoinerState  # and after it


class JoinedHistory:
    """The last history joined, for the next assembly of the same session to go on from."""

    def __init__(self) -> None:
        self._last: _Joined | None = None

    def extend(
        self,
        joiner: Joiner,
        history: Sequence[Message],
        render: Callable[[Iterable[Message]], Iterable[WireMessage]],
    ) -> int:
        """Join `history` (its wire messages from `render`) into `joiner`, going on from the
        last join where `history` starts with its messages; how many messages were joined anew
        (all of them when nothing could be kept)."""
        fmt = joiner.fmt
        ids = list(map(id, history))
        last, start = self._last, 0
        before = _JoinerState.of(joiner)
        if last is not None and last.format == fmt and last.before.matches(joiner):
            held = len(last.history_ids)
            if held <= len(ids) and ids[:held] == last.history_ids:
                last.after.restore(joiner)
                start = held
        rest = history[start:] if start else history
        joiner.extend(render(rest))
        self._last = _Joined(fmt, before, list(history), ids, _JoinerState.of(joiner))
        return len(history) - start

    def clear(self) -> None:
        self._last = None
