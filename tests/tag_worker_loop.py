"""A tag worker's own loop (adapters.tag_workers.main) run in this test's process on one batch:
the batch written as the daemon writes it, the worker's answers read as the daemon reads them."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import pytest

from tokend.adapters import tag_workers
from tokend.adapters.tag_wire import recv, send


def worker_answers(
    monkeypatch: pytest.MonkeyPatch, batch: list[tuple[int, str, bytes]]
) -> dict[int, str]:
    """Each (index, language, source)'s answer (its tags' JSON text) by index: one batch in,
    then the end of input; the answers arrive in one frame."""
    sent = io.BytesIO()
    send(sent, batch)
    answers = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(sent.getvalue())))
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(buffer=answers))
    monkeypatch.setattr(sys, "argv", ["tag_workers"])
    monkeypatch.setattr(tag_workers.os, "nice", lambda _n: 0)  # not this test's process
    monkeypatch.setattr(tag_workers, "_watch_parent", lambda _pid: None)
    tag_workers.main()
    answers.seek(0)
    frame, _retiring = recv(answers)
    return {index: text for index, text, _packed in frame}
