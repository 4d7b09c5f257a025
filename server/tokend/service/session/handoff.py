"""session/handoff: a new child session for a new goal, starting from what the parent knows.

Its first message is a summary-kind message (never the user's): the goal, the parent's
extractive digest (core.compaction.summary, drawn from its whole stored history by core.compaction.history_record,
with the goal as the summary's instructions) and the contents
of up to `[handoff] max_files` files within `file_tokens` (core.session.handoff ranks them by the
artifact trail; they are read now, from the session's workspace folder, and only from inside
it). The digest is kept with the message, so the child's first compaction merges it. The
parent is not changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokend.core.budget.limits import history_summary_target_tokens
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.compaction.digest import digest_to_json
from tokend.core.compaction.history_record import record_digest, record_of
from tokend.core.compaction.summary import USER_WORDS_TOKENS, render_summary
from tokend.core.errors import InvalidParams
from tokend.core.session.handoff import FileChoice, choose_files, handoff_text, ranked_files
from tokend.core.types import SessionInfo
from tokend.core.workspace.files import PathConflict, PathOutside, workspace_folder
from tokend.service.counting.counter import ModelCounter
from tokend.service.ports import WorkspaceFiles
from tokend.service.session.ports import SessionService
from tokend.service.session.sessions import new_id
from tokend.service.session.turns import run_to_end

MAX_FILE_BYTES = 4_000_000  # a file larger than this is not read (it could not fit anyway)


@dataclass(frozen=True)
class HandedOff:
    child: SessionInfo
    message_id: str
    tokens: int  # the first message, as the child's gauge counts it
    files: tuple[FileChoice, ...]
    snapshot: BudgetSnapshot


async def handoff(service: SessionService, session_id: str, goal: str) -> HandedOff:
    """The child session for `goal` (see the module docstring)."""
    if not goal.strip():
        raise InvalidParams("goal must say what the new thread is for")
    data = service.sessions.state(session_id).data  # SessionNotFound for an unknown id
    config = service.models.config_for(data.info.workspace_uri)
    counter = service.models.counter(data.model)
    folder = workspace_folder(data.info.workspace_uri) if data.info.workspace_uri else None
    limit = service.models.input_limit(data)

    def build() -> tuple[str, dict[str, Any], list[FileChoice]]:
        every = service.store.messages.load_all_messages(session_id)
        trail = [m for m in every if m.compacted_by != "rewind"]
        texts: dict[str, str] = {}
        budget = config.handoff.file_tokens
        ranked = ranked_files(trail, goal)
        choices = choose_files(
            _candidates(service.files, ranked, folder, counter, budget, texts), config.handoff
        )
        digest = record_digest(record_of(every, data.messages))
        rendered = render_summary(
            digest,
            counter.count_texts,
            target_tokens=history_summary_target_tokens(data.model, config.budget),
            user_words_tokens=min(USER_WORDS_TOKENS, max(limit // 8, 1)),
            instructions=goal,
        )
        files = [(c.path, texts[c.path]) for c in choices if c.included]
        text = handoff_text(goal, session_id, rendered.text, files)
        return text, digest_to_json(digest), choices

    text, digest, choices = await service.workers.run(build)
    # The commit point: once the child is being created, a cancel no longer stops it (a child
    # without its first message would be left otherwise); before, nothing was written.
    return await run_to_end(_create_child(service, data.info, goal, text, digest, choices))


async def _create_child(
    service: SessionService,
    parent: SessionInfo,
    goal: str,
    text: str,
    digest: dict[str, Any],
    choices: list[FileChoice],
) -> HandedOff:
    now = service.clock.now()
    child = SessionInfo(
        id=new_id(),
        model=parent.model,
        created_at=now,
        updated_at=now,
        title=f"handoff: {_first_line(goal)}",
        workspace_uri=parent.workspace_uri,
        parent_id=parent.id,
        context_window=parent.context_window,
        handoff_from=parent.id,
        goal=goal,
    )
    await service.workers.run(lambda: service.store.create_session(child))
    state = service.sessions.state(child.id)
    change = await service.workers.run(
        lambda: service.changes.summary_change(state.data, text, digest, [])
    )
    applied = await state.apply_async(change, None, service.workers.submit)
    snapshot = service.listeners.announce(change, applied)
    return HandedOff(child, change.message.id, change.tokens, tuple(choices), snapshot)


def _candidates(
    files: WorkspaceFiles,
    paths: Sequence[str],
    folder: Path | None,
    counter: ModelCounter,
    file_tokens: int,
    texts: dict[str, str],
) -> Iterator[tuple[str, int | None, str | None]]:
    """(path, tokens, problem) for each ranked path, read lazily (a file named twice, relative
    and absolute, once); the texts go into `texts`."""
    seen: set[Path] = set()
    for path in paths:
        if folder is None:
            yield path, None, "the session has no workspace folder"
            continue
        target = (folder / path).resolve()
        if target in seen:
            continue
        seen.add(target)
        text, problem = _read(files, folder, path)
        if text is None:
            yield path, None, problem
            continue
        tokens, _whole = counter.count_long(text, stop_above=file_tokens)
        if tokens <= file_tokens:
            texts[path] = text
        yield path, tokens, None


def _read(files: WorkspaceFiles, folder: Path, path: str) -> tuple[str | None, str | None]:
    """The file's text, or why it cannot be given: outside the workspace, missing, binary."""
    root = folder.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        return None, "outside the workspace folder"
    try:  # read without leaving the root: a folder swapped for a symlink is not followed out
        raw = files.read_bytes(root, target.relative_to(root).as_posix(), MAX_FILE_BYTES)
    except PathOutside:
        return None, "outside the workspace folder"
    except (OSError, PathConflict):
        return None, "not on disk now"
    if len(raw) > MAX_FILE_BYTES:
        return None, f"over {MAX_FILE_BYTES:,} bytes"
    if b"\0" in raw[:8192]:
        return None, "binary"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def _first_line(goal: str, limit: int = 80) -> str:
    line = goal.strip().splitlines()[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"
