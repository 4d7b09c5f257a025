"""Found (issue 22): a reply that grew (GrowReply, the follower's streamed replies) and a prune
each built the session's whole message log again, one entry per live message: a cost that grew
with the session (50,000 entries for one grown reply at 50,000 messages). The log now takes the
changed messages in place of the old ones (core.session.message_log.MessageLog.replaced).

Oracles: the entries written to message logs, counted while the change is applied, and the
session a whole load of the store gives afterwards (load_session_data(lazy=False))."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.appending import append
from tests.service.test_session_lazy_appends import built
from tokend.core.session import message_log
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_service
from tokend.service.service import TokendService
from tokend.service.session.loading import load_session_data
from tokend.service.session.reply_growth import grow_reply

EXCHANGES = 60  # 180 messages


class _Writes:
    """Entries written to any message log's storage."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = message_log._Entries.add

        def add(entries, message, tokens):
            self.count += 1
            real(entries, message, tokens)

        monkeypatch.setattr(message_log._Entries, "add", add)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[TokendService]:
    opened = open_service(None, f"sqlite:///{tmp_path / 'edits.sqlite3'}")
    yield opened
    opened.close()


def _as_stored(service, sid: str) -> None:
    """The session in memory is the one a whole load of the store gives."""
    data = service.sessions.state(sid).data
    info = service.store.get_session(sid)
    model = service.models.model_info(info)
    whole = load_session_data(
        service.store, info, model, service.models.counter(model), lazy=False
    )[0]
    assert list(data.messages) == list(whole.messages)
    assert dict(data.message_tokens) == dict(whole.message_tokens)
    assert data.log.total_tokens == sum(whole.message_tokens.values())
    assert data.log.gated == whole.log.gated
    assert data.prompt_cache == whole.prompt_cache and data.totals == whole.totals


def test_a_prune_and_a_grown_reply_write_only_what_changed(
    service: TokendService, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = built(service, EXCHANGES)
    writes = _Writes(monkeypatch)
    data = service.sessions.state(sid).data
    results = [sp.id for m in data.messages for sp in m.parts if m.role == "tool"]
    service.sessions.state(sid).apply(service.changes.prune_change(data, results[3:5]))
    assert writes.count == 0  # main: 180, the whole log again
    _as_stored(service, sid)

    reply = data.messages[-2]  # the last call; its result after it
    usage = Usage(input_tokens=40, output_tokens=90, cache_read_tokens=3_000)
    writes.count = 0  # the whole load above wrote its own log
    grown = asyncio.run(grow_reply(service, sid, reply.id, [TextPart("and more")], usage))
    assert grown and writes.count == 0  # main: 180
    assert service.sessions.state(sid).data.messages[-2].usage == usage
    _as_stored(service, sid)
    writes.count = 0
    append(service, sid, "user", [TextPart("next")])  # appends after the replaced ones
    assert writes.count == 1
    _as_stored(service, sid)


def test_many_replacements_keep_each_version_as_it_was() -> None:
    """Past OVERRIDES_MAX replaced messages the log copies its storage once; every version
    made on the way still sees its own messages (oracle: plain lists kept beside)."""
    log = message_log.MessageLog.of((), {})
    messages = [_message(i, "a") for i in range(40)]
    for m in messages:
        log = log.appended(m, 1)
    versions = [(log, list(messages))]
    for round_ in range(message_log.OVERRIDES_MAX // 20 + 3):
        for index in range(0, 40, 2):
            messages[index] = _message(index, f"r{round_}")
            log = log.replaced({index: (messages[index], 2 + round_)})
        log = log.appended(extra := _message(1_000 + round_, "x"), 1)
        messages.append(extra)
        versions.append((log, list(messages)))
    for version, expected in versions:
        assert list(version.messages) == expected
        assert list(reversed(version.messages)) == expected[::-1]
        assert [version.messages[i] for i in range(len(expected))] == expected
        assert version.total_tokens == sum(version.tokens[m.id] for m in expected)
        assert version.index_of(expected[-1].id) == len(expected) - 1


def _message(i: int, text: str):
    from datetime import UTC, datetime

    from tokend.core.types import Message, StoredPart

    part = StoredPart(f"p{i}", TextPart(text), 1)
    return Message(f"m{i}", "s", "user", (part,), datetime(2026, 1, 1, tzinfo=UTC))


def test_a_lazy_log_finds_and_replaces_what_was_appended_since_without_its_bodies() -> None:
    """An exact count or a grown reply of a message appended after a restart reads no body
    (it is applied on the event loop); the bodies come when an older message is asked for."""
    stored = [_message(i, "stored") for i in range(30)]
    reads: list[int] = []

    def load():
        reads.append(1)
        return [(m, 1) for m in stored]

    log = message_log.MessageLog.lazy(30, 30, message_log.GatedTally(), load)
    for i in (30, 31):
        log = log.appended(_message(i, "new"), 1)
    index = log.index_of("m31")
    assert index == 31 and log.messages[31].id == "m31" and log.tokens["m31"] == 1
    log = log.replaced({31: (_message(31, "counted exactly"), 5)})
    assert log.at(31)[1] == 5 and log.total_tokens == 36
    newest = reversed(log.messages)
    assert [next(newest).id, next(newest).id] == ["m31", "m30"]
    assert log.index_of("m3", start=30) is None  # is it at or after m30? (an exact count asks)
    assert reads == []  # main: no such lookups; the whole log was read to find the message
    assert log.index_of("m3") == 3 and reads == [1]
    assert [m.id for m in log.messages] == [f"m{i}" for i in range(32)]
    assert log.messages[31].parts[0].part == TextPart("counted exactly")
