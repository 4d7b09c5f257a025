"""A session loaded from its row alone (core.session.gauge_state; message bodies read when first needed)
is the session its owner had: the same snapshot, and once read, the same messages and counts as
a whole load. The oracles: the snapshot the live owner published before it was dropped, and the
messages a whole load of the store gives (load_session_data(lazy=False))."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tests.appending import append
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.session.history import rewind
from tokend.service.session.loading import load_session_data

OUTPUT = "tests/test_x.py::test_{} FAILED AssertionError: expected 3 got 4\n" * 30


def _turns(service, sid: str, start: int, count: int) -> None:
    for i in range(start, start + count):
        append(service, sid, "user", [TextPart(f"step {i}: make the test pass")])
        write = 500 if i % 4 == 0 else 0  # a 1-hour write now and then, reads between
        usage = Usage(
            input_tokens=40,
            output_tokens=25,
            cache_read_tokens=900 + 300 * i,
            cache_write_tokens=write,
            cache_write_1h_tokens=write,
        )
        append(
            service,
            sid,
            "assistant",
            [ToolCallPart(f"c{i}", "Bash", {"n": i})],
            usage=usage,
            model="gpt-4o",
        )
        append(
            service, sid, "tool", [ToolResultPart(f"c{i}", "Bash", OUTPUT.replace("{}", str(i)))]
        )


def _same_after_a_reload(service, sid: str) -> None:
    before = service.sessions.snapshot(sid)
    service.sessions.forget(sid)  # as a restarted daemon: nothing of the session in memory
    state = service.sessions.state(sid)
    assert state.data.log.messages._entries._load is not None  # not read yet
    assert state.snapshot == before
    assert before.prompt_cache is not None and before.prompt_cache.ttl_s == 3_600
    info = service.store.get_session(sid)
    model = service.models.model_info(info)
    whole = load_session_data(
        service.store, info, model, service.models.counter(model), lazy=False
    )[0]
    assert list(state.data.messages) == list(whole.messages)  # read now
    assert dict(state.data.message_tokens) == dict(whole.message_tokens)
    # After a rewind the live anchor has no prediction, a whole load recomputes one: the
    # lazy load keeps the live figures (the snapshot above), else the anchors are the same.
    anchors = [
        a and replace(a, call=replace(a.call, predicted_tokens=0, error_pct=0))
        for a in (state.data.anchor, whole.anchor)
    ]
    assert anchors[0] == anchors[1] and state.data.added.tokens == whole.added.tokens
    assert state.data.totals == whole.totals and state.data.times == whole.times
    assert state.data.prompt_cache == whole.prompt_cache


def test_a_lazily_loaded_session_is_the_one_its_owner_had(tmp_path: Path) -> None:
    service = open_service(None, f"sqlite:///{tmp_path / 'lazy.sqlite3'}")
    try:
        sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
        _turns(service, sid, 0, 6)
        append(service, sid, "user", [TextPart("and without a provider figure since")])
        _same_after_a_reload(service, sid)
        _turns(service, sid, 6, 2)  # appends to a lazily loaded session
        _same_after_a_reload(service, sid)
        data = service.sessions.state(sid).data
        results = [sp.id for m in data.messages for sp in m.parts if m.role == "tool"]
        service.sessions.state(sid).apply(service.changes.prune_change(data, results[:3]))
        _same_after_a_reload(service, sid)
        service.changes.append_boundary(sid, "Summary: the tests of steps 0 to 7 were fixed.")
        _turns(service, sid, 8, 3)
        _same_after_a_reload(service, sid)
        to = service.sessions.state(sid).data.messages[-4].id
        asyncio.run(rewind(service, sid, to, None))
        _same_after_a_reload(service, sid)
    finally:
        service.close()
