"""The big strings of one body (bigframes.py), and how to put them back into its parsed skeleton.

`SpooledStrings.resolve` puts each placeholder back: a toolResult's `output` in `session/append`
becomes its `SpooledText` (a core KeptText), unread; any other string is read back whole, and
counts with the skeleton against the limit of a whole frame (else BodyTooLarge).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tokend.daemon.bigstrings import SpooledText
from tokend.lsp.strict import bounds_problem


class BodyTooLarge(Exception):
    """The message without its tool outputs (or with strings read back) is over the limit."""


class SpooledStrings:
    """The big strings of one body and how to put them back into its parsed skeleton."""

    def __init__(
        self,
        mark: str,
        strings: list[SpooledText],
        skeleton_bytes: int,
        body_bytes: int,
        problem: str | None = None,
    ) -> None:
        self.body_bytes = body_bytes  # the whole body's length, as its frame said
        self.problem = problem  # a big string was not valid JSON text: the body is not JSON
        self._mark = mark
        self._strings = strings
        self._skeleton_bytes = skeleton_bytes

    def __len__(self) -> int:
        return len(self._strings)

    def bounds_problem(self, message: Any) -> str | None:
        """A field bounded by lsp.strict.FIELD_CHARS that holds a longer string (a big one
        counted by its characters in the file, unread), as InvalidParams' message; or None."""
        if not isinstance(message, dict):
            return None

        def length(value: str) -> int:
            index = self._index(value)
            return len(value) if index is None else self._strings[index].chars

        return bounds_problem(message.get("params"), length)

    def resolve(self, message: Any, limit: int) -> Any:
        """`message` with every placeholder put back (see the module docstring). Raises
        BodyTooLarge when the skeleton plus the strings read back pass `limit` bytes."""
        left = self._attach_outputs(message)
        if not left:
            return message
        texts = {i: "".join(self._strings[i].pieces()) for i in self._within(left, limit)}
        return self._read_back(message, texts)

    async def resolve_async(self, message: Any, limit: int) -> Any:
        """`resolve`, the strings read back a piece at a time: the event loop serves other
        connections between the pieces."""
        left = self._attach_outputs(message)
        if not left:
            return message
        texts = {}
        for i in self._within(left, limit):
            pieces = []
            for piece in self._strings[i].pieces():
                pieces.append(piece)
                await asyncio.sleep(0)
            texts[i] = "".join(pieces)
        return self._read_back(message, texts)

    def _attach_outputs(self, message: Any) -> list[int]:
        """Tool results' outputs become their SpooledTexts; the strings left to read back."""
        left = set(range(len(self._strings)))
        for part in _append_parts(message):
            index = self._index(part.get("output"))
            if index is not None and part.get("type") == "toolResult":
                part["output"] = self._strings[index]
                left.discard(index)
        return sorted(left)

    def _within(self, left: list[int], limit: int) -> list[int]:
        """`left`, if the skeleton and they fit `limit` bytes; else BodyTooLarge."""
        if self._skeleton_bytes + sum(self._strings[i].utf8_bytes for i in left) > limit:
            raise BodyTooLarge("the message's strings other than tool outputs are too large")
        return left

    def _index(self, value: Any) -> int | None:
        if isinstance(value, str) and value.startswith(self._mark):
            return int(value[len(self._mark) :])
        return None

    def _read_back(self, root: Any, texts: dict[int, str]) -> Any:
        """Every remaining placeholder, in values and keys, replaced by its text (iteratively:
        the skeleton may nest as deep as the JSON parser allowed)."""

        def fix(value: Any) -> Any:
            index = self._index(value)
            if index is None or isinstance(value, SpooledText):
                return value
            return texts[index]

        root = fix(root)
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                for i, item in enumerate(node):
                    node[i] = fix(item)
                    stack.append(node[i])
            elif isinstance(node, dict):
                if any(self._index(k) is not None for k in node):
                    items = [(fix(k), v) for k, v in node.items()]
                    node.clear()
                    node.update(items)
                for key, item in node.items():
                    node[key] = fix(item)
                    stack.append(node[key])
        return root


def _append_parts(message: Any) -> list[dict[str, Any]]:
    """The parts of a session/append request, if it is one (else none)."""
    if not isinstance(message, dict) or message.get("method") != "session/append":
        return []
    params = message.get("params")
    inner = params.get("message") if isinstance(params, dict) else None
    parts = inner.get("parts") if isinstance(inner, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
