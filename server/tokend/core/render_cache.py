"""Rendered wire messages kept per session, so a warm assembly renders only what changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tokend.core.types import Message, StoredPart
from tokend.core.wire_formats import WireFormat, WireMessage, render_message


class RenderCache:
    """Rendered wire messages by format and message id, re-rendered when the parts change
    (a pruned part, a streamed one). One per session; the cached output is never mutated."""

    def __init__(self) -> None:
        self._by_format: dict[
            str, dict[str, tuple[tuple[StoredPart, ...], tuple[WireMessage, ...]]]
        ] = {}

    def render(self, message: Message, fmt: WireFormat) -> tuple[WireMessage, ...]:
        entries = self._by_format.setdefault(fmt, {})
        hit = entries.get(message.id)
        if hit is not None and (hit[0] is message.parts or hit[0] == message.parts):
            return hit[1]
        wire = render_message(message, fmt)
        entries[message.id] = (message.parts, wire)
        return wire

    def render_all(self, messages: Iterable[Message], fmt: WireFormat) -> Iterator[WireMessage]:
        """The wire messages of `messages`, in order (the warm path of a whole history)."""
        entries = self._by_format.setdefault(fmt, {})
        get = entries.get
        for message in messages:
            hit = get(message.id)
            if hit is None or (hit[0] is not message.parts and hit[0] != message.parts):
                hit = (message.parts, render_message(message, fmt))
                entries[message.id] = hit
            yield from hit[1]

    def clear(self) -> None:
        self._by_format.clear()

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._by_format.values())
