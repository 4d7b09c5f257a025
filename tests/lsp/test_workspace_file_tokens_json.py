"""workspace/fileTokens' reply is written by json_array (lsp/wire/common.py) from each figure's
wire object: the text is json.dumps of the whole list (the oracle: the standard library's own
encoding of the figures' protocol.md shape, written out here), and the encoder runs once per
ARRAY_CHUNK figures, not once per figure (bench/reshape.py: 100,000 figures took 1.26-1.31x
main 9f76291's time when each became a wire object and was then encoded alone)."""

from __future__ import annotations

import json
import math

import pytest

from tokend.lsp.file_figures import figure_json
from tokend.lsp.wire import common as wire_common
from tokend.lsp.wire import json_array
from tokend.lsp.wire.common import ARRAY_CHUNK
from tokend.service.workspace.figures import FileFigure


def _figures(count: int) -> list[FileFigure]:
    return [
        FileFigure(
            f"src/m{i}.py",
            100 + i,
            7 * i,
            "estimated",
            i % 3 == 0,
            "binary" if i % 5 == 0 else None,
        )
        for i in range(count)
    ]


def _protocol_shape(f: FileFigure) -> dict[str, object]:
    """protocol.md's FileFigure: path, bytes, tokens, basis, dirty, reason? (left out when none)."""
    shape: dict[str, object] = {
        "path": f.path,
        "bytes": f.size_bytes,
        "tokens": f.tokens,
        "basis": f.basis,
        "dirty": f.dirty,
    }
    if f.reason:
        shape["reason"] = f.reason
    return shape


@pytest.mark.parametrize("count", [0, 1, ARRAY_CHUNK, 2 * ARRAY_CHUNK + 3])
def test_the_array_is_the_standard_encoding_of_every_figure(count: int) -> None:
    figures = _figures(count)
    text = json_array(map(figure_json, figures))
    assert text == json.dumps([_protocol_shape(f) for f in figures])
    assert json.loads(text) == [_protocol_shape(f) for f in figures]


def test_the_encoder_runs_once_a_chunk_not_once_a_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: each chunk is one call of the encoder made once
    (core/json_text.small_dumps), and no JSONEncoder is built for a figure (json.dumps(item,
    allow_nan=False) built a new encoder for every item)."""
    calls = {"encoders": 0, "passes": 0}
    original_init, original_pass = json.JSONEncoder.__init__, wire_common.small_dumps

    def counted_init(self: json.JSONEncoder, *args: object, **kwargs: object) -> None:
        calls["encoders"] += 1
        original_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def counted_pass(value: object) -> str:
        calls["passes"] += 1
        return original_pass(value)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counted_init)
    monkeypatch.setattr(wire_common, "small_dumps", counted_pass)
    count = 5 * ARRAY_CHUNK + 1
    figures = [figure_json(f) for f in _figures(count)]
    json_array(figures)
    assert calls["encoders"] == 0
    assert calls["passes"] == math.ceil(count / ARRAY_CHUNK)
