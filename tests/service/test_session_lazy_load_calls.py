"""A lazily loaded session reads its bodies at its first `context/assemble` after a restart
(10,000 messages in bench/scale_assemble): the passes the load makes over what it read, to
find a provider's compaction and to add up each message's stored counts, make no call a
message for the usual ones (sent, counted and kept whole). Counted with sys.setprofile (the
Python functions of the session's loading and of the usage rules entered while the bodies are
read; the store's own read not counted), not timed. Oracle: the messages and counts a whole
load of the store gives (load_session_data(lazy=False))."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.appending import append
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.session.loading import load_session_data

COUNTED = ("service/session/loading.py", "core/usage/accounting.py", "assembly/wire_formats.py")


def test_the_bodies_read_are_gone_over_without_a_call_a_message(tmp_path: Path) -> None:
    service = open_service(None, f"sqlite:///{tmp_path}/tokend.sqlite3")
    try:
        sid = service.sessions.create_session("gpt-4o").id
        for i in range(100):
            append(service, sid, "user", [TextPart(f"step {i}")])
            usage = Usage(input_tokens=40 + i, output_tokens=25)
            call = ToolCallPart(f"c{i}", "Bash", {"n": i})
            append(service, sid, "assistant", [TextPart("running it"), call], usage=usage)
            append(service, sid, "tool", [ToolResultPart(f"c{i}", "Bash", f"ok {i}")])
        service.sessions.forget(sid)  # as a restarted daemon: nothing of it in memory
        state = service.sessions.state(sid)
        entered = [0]

        def seen(frame: Any, event: str, _arg: Any) -> None:
            if event == "call" and frame.f_code.co_filename.endswith(COUNTED):
                entered[0] += 1

        sys.setprofile(seen)
        try:
            read = list(state.data.messages)  # the bodies read now
        finally:
            sys.setprofile(None)
        assert len(read) == 300
        assert entered[0] < 10, entered[0]  # main c84769f: 2,003 (about 7 a message)
        info = service.store.get_session(sid)
        assert info is not None
        model = service.models.model_info(info)
        counter = service.models.counter(model)
        whole = load_session_data(service.store, info, model, counter, lazy=False)[0]
        assert read == list(whole.messages)
        assert dict(state.data.message_tokens) == dict(whole.message_tokens)
    finally:
        service.close()
