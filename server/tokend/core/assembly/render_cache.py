"""Rendered wire messages kept per session, so a warm assembly renders only what changed, and
each one's JSON text once it was written, so a warm reply joins text instead of encoding it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, islice

from tokend.core.assembly.join_prefix import JoinedHistory
from tokend.core.assembly.wire_formats import WireFormat, WireMessage, render_message
from tokend.core.json_text import small_dumps
from tokend.core.types import Message, StoredPart

_Entry = tuple[tuple[StoredPart, ...], tuple[WireMessage, ...]]


class RenderCache:
    """Rendered wire messages by format and message id, re-rendered when the parts change
    (a pruned part, a streamed one). One per session; the cached output is never mutated.

    `json_text` writes a wire message as `json.dumps` does and keeps that text for the wire
    messages this cache holds (found by identity: a message the assembly copied or built, a
    marked block, a merged turn, is written afresh and not kept)."""

    def __init__(self) -> None:
        self._by_format: dict[str, dict[str, _Entry]] = {}
        # id(wire) -> wire, for every wire held above; and its JSON text once written
        self._held: dict[int, WireMessage] = {}
        self._texts: dict[int, str] = {}
        # The last list joined by join_json: its wire messages (held, so that their ids stay
        # theirs), their ids, where each one's text ends in the joined text, and that text
        self._joined: tuple[list[WireMessage], list[int], list[int], str] = ([], [], [], "[]")
        self._system: WireMessage | None = None
        self._joined_bytes: tuple[str, bytes] | None = None  # the last join's text, encoded
        # The last history joined, for a warm assembly to go on from (join_prefix.py)
        self.joined_history = JoinedHistory()

    def render(self, message: Message, fmt: WireFormat) -> tuple[WireMessage, ...]:
        entries = self._by_format.setdefault(fmt, {})
        hit = entries.get(message.id)
        if hit is not None and (hit[0] is message.parts or hit[0] == message.parts):
            return hit[1]
        return self._store(entries, message, fmt)[1]

    def render_all(self, messages: Iterable[Message], fmt: WireFormat) -> Iterator[WireMessage]:
        """The wire messages of `messages`, in order (the warm path of a whole history; a
        message never rendered is stored here, without a call per message: a restarted
        daemon's first assembly renders them all)."""
        entries = self._by_format.setdefault(fmt, {})
        get, held = entries.get, self._held
        for message in messages:
            hit = get(message.id)
            if hit is None:
                wires = render_message(message, fmt)
                entries[message.id] = (message.parts, wires)
                for wire in wires:
                    held[id(wire)] = wire
                yield from wires
                continue
            if hit[0] is not message.parts and hit[0] != message.parts:
                hit = self._store(entries, message, fmt)
            yield from hit[1]

    def system_message(self, text: str) -> WireMessage:
        """OpenAI's system message for `text`: the same one while the text is the same, so a
        warm reply's join reuses its text too (never mutated, as the rest)."""
        held = self._system
        if held is None or held["content"] != text:
            held = {"role": "system", "content": text}
            self._system = held
        return held

    def json_text(self, wire: WireMessage) -> str:
        """`wire` as `json.dumps(wire, allow_nan=False)` writes it (ValueError for NaN)."""
        return self._texts_of((wire,), (id(wire),))[0]

    def join_json(self, wires: Sequence[WireMessage]) -> str:
        """`wires` as a JSON array, as `json.dumps(list(wires))` writes it (ValueError for
        NaN). The text of the last list joined is reused as far as `wires` starts with its very
        messages (a warm session: the same history, a copied or new message or two after it)."""
        ids = list(map(id, wires))
        _, held_ids, ends, text = self._joined
        same = _common_prefix(ids, held_ids)
        if same == len(ids) == len(held_ids):
            return text  # the very list again (a warm assembly of an unchanged session)
        fragments = self._texts_of(wires[same:], ids[same:])
        start = ends[same - 1] if same else 1  # where the kept text ends ("[" when none is)
        lengths = [len(fragment) + 2 for fragment in fragments]  # each one after ", "
        if lengths and not same:
            lengths[0] -= 2  # right after "["
        new_ends = ends[:same]
        new_ends += islice(accumulate(lengths, initial=start), 1, None)
        kept = text[:start] if same else "["
        if fragments:
            kept += ", " + ", ".join(fragments) if same else ", ".join(fragments)
        joined = kept + "]"
        self._joined = (list(wires), ids, new_ends, joined)
        return joined

    def join_json_bytes(self, wires: Sequence[WireMessage]) -> bytes:
        """join_json's text as bytes (ASCII), encoded once while the text joined is the same
        (a warm session's reply sends the kept bytes, not a new 2.6 MB copy each time)."""
        text = self.join_json(wires)
        held = self._joined_bytes
        if held is None or held[0] is not text:
            held = self._joined_bytes = (text, text.encode())
        return held[1]

    def _store(self, entries: dict[str, _Entry], message: Message, fmt: WireFormat) -> _Entry:
        old = entries.get(message.id)
        if old is not None:
            for wire in old[1]:
                self._held.pop(id(wire), None)
                self._texts.pop(id(wire), None)
        entry = (message.parts, render_message(message, fmt))
        entries[message.id] = entry
        for wire in entry[1]:
            self._held[id(wire)] = wire
        return entry

    def _texts_of(self, wires: Iterable[WireMessage], ids: Iterable[int]) -> list[str]:
        """Each wire message's JSON text: kept for the wires this cache holds (written and kept
        the first time), written for any other. A text is kept only while its wire is held, so
        an id with a kept text is that very wire's (no other object can have it meanwhile)."""
        held, texts, out = self._held, self._texts, []
        for wire, key in zip(wires, ids, strict=True):
            text = texts.get(key)
            if text is None:
                text = small_dumps(wire)
                if held.get(key) is wire:
                    texts[key] = text
            out.append(text)
        return out

    def clear(self) -> None:
        self._by_format.clear()
        self._held.clear()
        self._texts.clear()
        self._joined = ([], [], [], "[]")
        self._joined_bytes = None
        self.joined_history.clear()

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._by_format.values())


def system_message(text: str, cache: RenderCache | None) -> WireMessage:
    """OpenAI's system message for `text`: the cache's while it has one."""
    return cache.system_message(text) if cache else {"role": "system", "content": text}


def _common_prefix(ids: list[int], held: list[int]) -> int:
    """How many first items `ids` and `held` share (slices compared in C, halving)."""
    low, high = 0, min(len(ids), len(held))
    if ids[:high] == held[:high]:
        return high
    while high - low > 1:  # ids[:low] == held[:low], ids[:high] != held[:high]
        middle = (low + high) // 2
        if ids[:middle] == held[:middle]:
            low = middle
        else:
            high = middle
    return low
