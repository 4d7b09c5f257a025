"""A tag worker hands tree-sitter each source whole (issue 22): the read and progress callbacks
that let a thread of the daemon hand the interpreter on mid-parse cost a tenth of the parse,
and a worker process has no other thread to hand it to. The daemon's own thread still parses
through them (a big unsaved buffer must not hold the event loop)."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tokend.adapters import tag_workers
from tokend.adapters.tag_wire import recv, send, tags_json
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
    sent = io.BytesIO()
    send(sent, batch)
    answers = io.BytesIO()
    reads = _counted_reads(monkeypatch)
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(sent.getvalue())))
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(buffer=answers))
    monkeypatch.setattr(sys, "argv", ["tag_workers"])
    monkeypatch.setattr(tag_workers.os, "nice", lambda _n: 0)  # not this test's process
    monkeypatch.setattr(tag_workers, "_watch_parent", lambda _pid: None)
    tag_workers.main()  # the worker's loop: one batch in, then end of input
    answers.seek(0)
    frame, _retiring = recv(answers)  # the batch's answers in one frame
    got = {index: text for index, text, _packed in frame}
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
