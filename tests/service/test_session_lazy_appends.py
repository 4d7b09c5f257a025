"""Found (issue 22): after a restart, the first append to a session loaded from its row alone
(core.session.gauge_state) read every message body of its live context, on the daemon's event loop (the
append's change is computed there): at 50,000 messages the loop stopped for the whole read, and
every other connection with it. An append now adds after the bodies without reading them; a
toolResult whose call is not among the messages appended since has them read in the append's
worker thread, beside the loop.

Oracles: the store's reads of a session's messages, counted (and the thread each ran on), and
the messages a whole load of the store gives afterwards (load_session_data(lazy=False))."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.appending import append
from tokend.core.errors import InvalidParams
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.service import TokendService
from tokend.service.session.loading import load_session_data

OUTPUT = "src/app.py:3: E501 line too long (121 > 100 characters)\n" * 12


class _Reads:
    """Counts the store's reads of a session's messages (store.messages), with each one's thread."""

    def __init__(self, store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.threads: list[str] = []
        for name in ("load_messages", "load_all_messages"):
            real = getattr(store, name)
            monkeypatch.setattr(store, name, self._counted(real))

    def _counted(self, real):
        def read(*args, **kwargs):
            self.threads.append(threading.current_thread().name)
            return real(*args, **kwargs)

        return read


def _exchange(service, sid: str, i: int) -> None:
    usage = Usage(input_tokens=40, output_tokens=25, cache_read_tokens=900 + 30 * i)
    append(service, sid, "user", [TextPart(f"step {i}: make the test pass")])
    call = [ToolCallPart(f"c{i}", "Bash", {"n": i})]
    append(service, sid, "assistant", call, usage=usage, model="gpt-4o")
    append(service, sid, "tool", [ToolResultPart(f"c{i}", "Bash", OUTPUT)])


@pytest.fixture
def service(tmp_path: Path) -> Iterator[TokendService]:
    opened = open_service(None, f"sqlite:///{tmp_path / 'lazy.sqlite3'}")
    yield opened
    opened.close()


def built(service: TokendService, exchanges: int) -> str:
    """A new session of `exchanges` user turns, calls and results."""
    sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
    for i in range(exchanges):
        _exchange(service, sid, i)
    return sid


def _whole(service, sid: str):
    info = service.store.get_session(sid)
    model = service.models.model_info(info)
    return load_session_data(service.store, info, model, service.models.counter(model), lazy=False)[
        0
    ]


def test_appends_to_a_lazily_loaded_session_read_no_body(
    service: TokendService, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = built(service, 5)
    service.sessions.forget(sid)  # as a restarted daemon: nothing of the session in memory
    reads = _Reads(service.store.messages, monkeypatch)
    before = service.sessions.snapshot(sid)
    for i in range(5, 8):  # a user turn, a call, its result: the usual appends
        _exchange(service, sid, i)
    assert reads.threads == []  # main: one read of every body, at the first append
    after = service.sessions.snapshot(sid)
    assert after.version == before.version + 9
    whole = _whole(service, sid)
    state = service.sessions.state(sid).data
    assert list(state.messages) == list(whole.messages)  # read now, appends after them
    assert dict(state.message_tokens) == dict(whole.message_tokens)
    assert after.used_tokens == service.sessions.state(sid).snapshot.used_tokens


def test_a_result_for_an_older_call_reads_the_bodies_beside_the_event_loop(
    service: TokendService, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = built(service, 3)
    usage = Usage(input_tokens=40, output_tokens=25, cache_read_tokens=2_000)
    append(service, sid, "assistant", [ToolCallPart("late", "Bash", {})], usage=usage)
    service.sessions.forget(sid)
    reads = _Reads(service.store.messages, monkeypatch)
    loop_thread: list[str] = []

    async def append_on_loop() -> None:
        loop_thread.append(threading.current_thread().name)
        result = ToolResultPart("late", "Bash", OUTPUT)  # its call was stored before
        await service.appends.append(sid, "tool", [result])
        with pytest.raises(InvalidParams, match="which no toolCall"):
            await service.appends.append(sid, "tool", [ToolResultPart("none", "Bash", "x")])

    asyncio.run(append_on_loop())
    assert len(reads.threads) == 1  # the bodies, read once
    assert loop_thread[0] not in reads.threads  # main: read on the event loop
    assert list(service.sessions.state(sid).data.messages) == list(_whole(service, sid).messages)
