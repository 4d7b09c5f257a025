"""The shared service on a real SQLite file: versions, compaction marks, calibration, reloads."""

from __future__ import annotations

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters.tokenizers import load_encoding as exact_encoding
from tokend.core.errors import MessageTooLarge, SessionNotFound, UnknownModel, VersionConflict
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.compaction.tiers import compact


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path}/service.sqlite3"


def _tool_turn(service, sid, i, lines=900):
    append(service, sid, "user", [TextPart(f"task {i}")])
    append(service, sid, "assistant", [ToolCallPart(f"c{i}", "bash", {"cmd": f"make {i}"})])
    output = f"build step {i} printed a warning about deprecated flags\n" * lines
    append(service, sid, "tool", [ToolResultPart(f"c{i}", "bash", output)])


def test_versions_never_go_back_across_restarts_and_compactions(url):
    service = open_service(None, url)
    sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
    seen = [service.sessions.snapshot(sid).version]
    for i in range(10):
        _tool_turn(service, sid, i)
        seen.append(service.sessions.snapshot(sid).version)
    read = service.sessions.snapshot(sid).version
    assemble_context(service, sid, AssembleInput(system="Be brief."))
    assert service.sessions.snapshot(sid).version == read  # an assembly is a read
    compact(service, sid, "prune")
    seen.append(service.sessions.snapshot(sid).version)
    service.changes.append_boundary(sid, "summary of the work so far")
    seen.append(service.sessions.snapshot(sid).version)
    service.close()

    reopened = open_service(None, url)
    seen.append(reopened.sessions.snapshot(sid).version)
    assert seen == sorted(seen) and len(set(seen[:-1])) == len(seen) - 1
    assert seen[-1] == seen[-2]  # the reloaded session is at the version it was left at
    with pytest.raises(VersionConflict) as stale:
        append(reopened, sid, "user", [TextPart("late")], if_version=seen[-1] - 1)
    assert stale.value.data == {"currentVersion": seen[-1]}
    reopened.close()


def test_a_prune_moves_the_anchored_gauge_by_what_it_freed_also_after_a_restart(url):
    service = open_service(None, url)
    sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
    for i in range(10):
        _tool_turn(service, sid, i)
    append(
        service,
        sid,
        "assistant",
        [TextPart("done")],
        usage=Usage(input_tokens=100_000, output_tokens=10),
    )
    assert not service.sessions.snapshot(sid).estimated
    assemble_context(service, sid, AssembleInput(system="You are a careful engineer. " * 500))
    before = service.sessions.snapshot(sid).used_tokens
    outcome = compact(service, sid, "prune")
    action = outcome.actions[0]
    assert action.kind == "prune" and outcome.before == before
    # Oracle: tiktoken's counts of the cleared outputs, less the placeholders sent instead.
    enc = exact_encoding("o200k_base")
    pruned_ids = {
        p.id
        for m in service.store.messages.load_all_messages(sid)
        for p in m.parts
        if p.compacted_at
    }
    outputs = [
        p.part.output
        for m in service.store.messages.load_all_messages(sid)
        for p in m.parts
        if p.id in pruned_ids
    ]
    freed = sum(len(enc.encode(o)) for o in outputs) - len(outputs) * len(
        enc.encode("[Old tool result content cleared]")
    )
    after = service.sessions.snapshot(sid)
    assert action.tokens_freed == freed == before - after.used_tokens
    # Still anchored on the provider's figure: the system prompt and tools stay counted.
    assert not after.estimated and after.compactions == 1
    assert {b.category for b in after.breakdown} >= {"system", "messages"}
    service.close()

    reopened = open_service(None, url)
    again = reopened.sessions.snapshot(sid)
    assert again.used_tokens == after.used_tokens and not again.estimated
    every = reopened.store.messages.load_all_messages(sid)
    pruned = [p for m in every for p in m.parts if p.compacted_at is not None]
    assert len(pruned) == outcome.actions[0].parts
    assert all(p.part.output.startswith("build step") for p in pruned)  # originals kept
    reopened.close()


def test_calibration_learns_for_models_without_a_tokenizer_and_persists(url):
    service = open_service(None, url)
    sid = service.sessions.create_session(
        "claude-mythos-preview"
    ).id  # no tokenizer family: estimated
    context = 20_000
    append(service, sid, "assistant", [ToolCallPart("c0", "read", {})])
    for i in range(30):
        text = f"def handler_{i}(request):\n    return respond(request, status={i})\n" * 40
        append(service, sid, "tool", [ToolResultPart(f"c{i}", "read", text)])
        context += int(len(text) / 3.1) + 20  # Claude's tokenizer: ~3.1 chars/token on code
        call = ToolCallPart(f"c{i + 1}", "read", {})
        append(service, sid, "assistant", [call], usage=Usage(context, 5))
        context += 5
    learned = service.calibration.calibrator.to_state()
    assert learned, "the calibrator saw provider figures and should have learned"
    errors = [abs(e.error_pct) for e in service.sessions.state(sid).data.errors]
    assert len(errors) == 29
    # the gauge's prediction gets better as it learns the model's chars-per-token
    assert sum(errors[-5:]) < sum(errors[:5]) / 2
    service.close()
    reopened = open_service(None, url)
    assert reopened.calibration.calibrator.to_state() == learned
    assert not reopened.models.counter(reopened.sessions.state(sid).data.model).exact
    reopened.close()


def test_bad_requests_write_nothing(url):
    service = open_service(None, url)
    with pytest.raises(UnknownModel):
        service.sessions.create_session("no-such-model")
    with pytest.raises(SessionNotFound):
        service.sessions.snapshot("01JD0000000000000000000000")
    sid = service.sessions.create_session("gpt-4o", context_window=20_000).id
    with pytest.raises(MessageTooLarge):
        append(service, sid, "user", [TextPart("word " * 10_000)])
    assert service.store.messages.load_all_messages(sid) == []
    assert service.sessions.snapshot(sid).version == 0
    service.close()


def test_each_workspace_sees_its_own_declared_models(url, tmp_path):
    declared, other = tmp_path / "declared", tmp_path / "other"
    declared.mkdir()
    other.mkdir()
    (declared / ".tokend.toml").write_text(
        '[models."acme-coder-7"]\ncontext_window = 64000\nmax_output_tokens = 8000\n'
    )
    service = open_service(None, url)  # as the daemon: one service for every workspace
    sid = service.sessions.create_session("acme-coder-7", workspace_uri=declared.as_uri()).id
    assert service.sessions.snapshot(sid).context_window == 64_000
    with pytest.raises(UnknownModel):
        service.sessions.create_session("acme-coder-7", workspace_uri=other.as_uri())
    service.close()


def test_over_the_threshold_with_nothing_to_prune_the_snapshot_warns(url):
    service = open_service(None, url)
    sid = service.sessions.create_session("gpt-4o").id
    append(service, sid, "user", [TextPart("a long conversation")])
    append(service, sid, "assistant", [TextPart("yes")], usage=Usage(112_000, 40))
    snapshot = service.sessions.snapshot(sid)
    assert snapshot.used_tokens >= snapshot.autocompact_threshold
    assert any("autocompact threshold" in w for w in snapshot.warnings)
    service.close()


def test_unwatched_sessions_are_dropped_from_memory_and_reload_intact(url, monkeypatch):
    import tokend.service.session.sessions as service_module

    monkeypatch.setattr(service_module, "MAX_LOADED_SESSIONS", 3)
    service = open_service(None, url)
    watched = service.sessions.create_session("gpt-4o").id
    seen = []
    unsubscribe = service.listeners.subscribe(watched, lambda event: seen.append(event.snapshot))
    ids = [service.sessions.create_session("gpt-4o").id for _ in range(6)]
    for sid in ids:
        append(service, sid, "user", [TextPart(f"hello {sid}")])
    append(service, watched, "user", [TextPart("still watched")])
    loaded = {s.session_id for s in service.sessions.loaded_snapshots()}
    assert watched in loaded and len(loaded) <= 3  # a watched session is never dropped
    assert seen and seen[-1].version == 1
    assert service.sessions.snapshot(ids[0]).version == 1  # dropped, then reloaded from the store
    unsubscribe()
    service.close()
