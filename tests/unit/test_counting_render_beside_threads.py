"""A big tool input is rendered for counting a piece at a time (core/counting/render.py's to_json_text
over core/json_text.py): a worker thread that counts an 8 MB command no longer holds the
interpreter from the event loop for the whole render.

Found by issue 17's fuzz (a loop trace): `session/append` of a tool call whose `command` is
8 MB held the loop 30 ms while a worker thread rendered it: json.dumps writes a whole string in
one C call, holding the interpreter throughout. Judged without a clock: every call into the C
encoder is watched, and none may write more than a piece (the interpreter can change hands
between calls, not within one).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tokend.core import json_text
from tokend.core.counting.render import part_text
from tokend.core.types import ToolCallPart

COMMAND = ("grep -rn 'naïve' src/ && echo 😀 done; " * 250_000)[: 8 << 20]


def test_no_single_encoder_call_writes_a_big_tool_input(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = "bash " + json.dumps(
        {"command": COMMAND, "timeout": 5}, ensure_ascii=False, separators=(",", ":")
    )
    longest = [0]

    def watched(call: Callable[..., str]) -> Callable[..., str]:
        def run(*args: Any, **kwargs: Any) -> str:
            text = call(*args, **kwargs)
            longest[0] = max(longest[0], len(text))
            return text

        return run

    monkeypatch.setattr(json, "dumps", watched(json.dumps))
    escapes = {ascii: watched(escape) for ascii, escape in json_text._ESCAPE.items()}
    monkeypatch.setattr(json_text, "_ESCAPE", escapes)
    part = ToolCallPart(call_id="c", name="bash", input={"command": COMMAND, "timeout": 5})

    rendered = part_text(part)

    assert rendered == expected
    print(f"the longest single encoder call wrote {longest[0]:,} characters")
    assert longest[0] <= json_text.PIECE_CHARS + 2  # one call for the whole: 8,388,625
