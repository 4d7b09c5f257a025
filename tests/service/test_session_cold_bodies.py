"""Found (issue 22): a restarted daemon's first read of a session's messages (the first
`context/assemble` after a restart) played every live message through the whole load again,
counting and classifying each part's text although the store keeps every part's count: 7.3 s
for 10,000 messages in bench/scale_session. The bodies are now read with the stored counts.

Oracles: the messages and counts a whole load gives (load_session_data(lazy=False)), and a
counter that fails if anything is counted or classified while the bodies are read."""

from __future__ import annotations

from pathlib import Path

from tests.appending import append
from tokend.core.types import (
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from tokend.service.app import open_service
from tokend.service.counting.counter import ModelCounter
from tokend.service.session import loading
from tokend.service.session.loading import load_session_data

OUTPUT = "FAILED tests/test_x.py::test_{} AssertionError: expected 3 got 4\n" * 20
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _build(service, sid: str) -> None:
    for i in range(12):
        append(service, sid, "user", [TextPart(f"step {i}: naïve ✓ make the test pass")])
        parts = [ReasoningPart("thinking it over"), ToolCallPart(f"c{i}", "Bash", {"n": i})]
        usage = Usage(input_tokens=40, output_tokens=25, cache_read_tokens=900 + 300 * i)
        append(service, sid, "assistant", parts, usage=usage, model="gpt-4o")
        result = ToolResultPart(f"c{i}", "Bash", OUTPUT.replace("{}", str(i)))
        append(service, sid, "tool", [result])
    append(service, sid, "user", [TextPart("this one"), ImagePart("image/png", PNG)])
    data = service.sessions.state(sid).data
    results = [sp.id for m in data.messages for sp in m.parts if m.role == "tool"]
    service.sessions.state(sid).apply(
        service.changes.prune_change(data, results[:4])
    )  # placeholders


def test_a_cold_read_of_the_bodies_counts_nothing(tmp_path: Path, monkeypatch) -> None:
    service = open_service(None, f"sqlite:///{tmp_path / 'cold.sqlite3'}")
    try:
        sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
        _build(service, sid)
        service.sessions.state(sid).data.messages[0]  # noqa: B018  # counted while live: read them all
        service.sessions.forget(sid)  # as a restarted daemon
        state = service.sessions.state(sid)
        with monkeypatch.context() as patch:
            counted: list[str] = []

            def refuse(self, *args, **kwargs):
                counted.append(args[0] if args else "?")
                raise AssertionError("a stored part was counted again")

            patch.setattr(ModelCounter, "count_parts", refuse)
            messages, tokens = list(state.data.messages), dict(state.data.message_tokens)
        assert not counted
        info = service.store.get_session(sid)
        model = service.models.model_info(info)
        whole = load_session_data(
            service.store, info, model, service.models.counter(model), lazy=False
        )
        assert messages == list(whole[0].messages)
        assert tokens == dict(whole[0].message_tokens)
    finally:
        service.close()


def test_a_part_without_a_stored_count_is_counted_as_before(tmp_path: Path) -> None:
    service = open_service(None, f"sqlite:///{tmp_path / 'gap.sqlite3'}")
    try:
        sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
        _build(service, sid)
        data = service.sessions.state(sid).data
        expected = dict(data.message_tokens)
        part = data.messages[3].parts[0]
        service.store.parts.set_part_tokens({part.id: None})  # a count the store lost
        service.sessions.forget(sid)
        state = service.sessions.state(sid)
        assert service.store.messages.load_messages(sid)[3].parts[0].tokens is None
        assert dict(state.data.message_tokens) == expected
        assert (
            service.store.messages.load_messages(sid)[3].parts[0].tokens == part.tokens
        )  # saved again
    finally:
        service.close()


def test_a_cold_read_finds_each_roles_framing_once(tmp_path: Path, monkeypatch) -> None:
    """The framing a message adds depends on its role and the provider, not on the message:
    main 1db3331 worked it out again for every message (10,000 times in the scale bench's first
    assemble, a provider-name lookup each), 37 times for these 37 messages; now once per role.
    The tokens are still the whole load's (the oracle)."""
    service = open_service(None, f"sqlite:///{tmp_path / 'framing.sqlite3'}")
    try:
        sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
        _build(service, sid)
        service.sessions.state(sid).data.messages[0]  # noqa: B018
        service.sessions.forget(sid)  # as a restarted daemon
        state = service.sessions.state(sid)
        asked: list[str] = []
        real = loading.message_overhead

        def counted(role: str, *args, **kwargs) -> int:
            asked.append(role)
            return real(role, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(loading, "message_overhead", counted)
            messages, tokens = list(state.data.messages), dict(state.data.message_tokens)
        assert len(messages) == 37
        assert sorted(asked) == sorted(set(asked)) == ["assistant", "tool", "user"]
        info = service.store.get_session(sid)
        model = service.models.model_info(info)
        whole = load_session_data(
            service.store, info, model, service.models.counter(model), lazy=False
        )
        assert tokens == dict(whole[0].message_tokens)
    finally:
        service.close()
