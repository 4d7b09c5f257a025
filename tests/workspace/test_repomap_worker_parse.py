"""A tag worker hands tree-sitter each source whole (issue 22): the read and progress callbacks
that let a thread of the daemon hand the interpreter on mid-parse cost a tenth of the parse,
and a worker process has no other thread to hand it to. The daemon's own thread still parses
through them (a big unsaved buffer must not hold the event loop)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tag_worker_loop import worker_answers
from tokend.adapters.tag_wire import tags_json
from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser

SOURCE = Path(__file__).resolve().parents[2] / "server" / "tokend" / "core" / "repomap"


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per source handed to tree-sitter a piece at a time, from now on."""
    calls: list[int] = []
    real = tag_parser._reader

    def counted(source: bytes):  # type: ignore[no-untyped-def]
        calls.append(len(source))
        return real(source)

    monkeypatch.setattr(tag_parser, "_reader", counted)
    return calls


def test_a_worker_parses_each_source_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(SOURCE.glob("*.py"))
    batch = [(i, "python", p.read_bytes()) for i, p in enumerate(files)]
    reads = _counted_reads(monkeypatch)
    got = worker_answers(monkeypatch, batch)  # the batch's answers in one frame
    assert reads == []  # main: one piecewise read per file
    alone = TagParser()  # the daemon's thread: through the callbacks, the same tags
    assert got == {i: tags_json(alone.tags(lang, src)) for i, lang, src in batch}
    assert len(reads) == len(batch) > 5


def test_the_daemons_thread_still_parses_a_piece_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = _counted_reads(monkeypatch)
    TagParser().tags("c", b"int main(void) { return 0; }\n")
    assert len(reads) == 1
