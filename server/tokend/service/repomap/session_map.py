"""repoMap/get and the map context/assemble sends: a session's map, fitted with its counter.

The budget is `budgetTokens`, else the session's repo-map target (core.budget.limits: input limit / 8,
clamped to 1,024..4,096, doubled when the session has no chat files). The focus is the given
one, else the session's chat files, and its last user message: its text (BM25 over the files'
names, paths and what they say; its best hits seed the graph's rank) and the identifiers in it
that the repository defines.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.budget.limits import repo_map_target_tokens
from tokend.core.counting.render import part_text
from tokend.core.models.catalog import ModelInfo
from tokend.core.ports import TokenCounter
from tokend.core.repomap.graph import Focus, identifiers_in
from tokend.core.session.data import SessionData
from tokend.service.counting.counter import ModelCounter
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.registry import Workspaces
from tokend.service.workspace.session_files import listed, session_index


@dataclass(frozen=True, slots=True)
class RepoMap:
    text: str
    tokens: int
    files: tuple[tuple[str, float], ...]  # (path, score), best first
    basis: str  # "exact" | "estimate"
    budget_tokens: int


def session_focus(index: WorkspaceIndex, data: SessionData) -> Focus:
    files = frozenset(p for p, read_only in listed(data) if not read_only)
    last_user = next((m for m in reversed(data.messages) if m.role == "user"), None)
    words = " ".join(part_text(sp.part) for sp in last_user.parts) if last_user else ""
    return Focus(files, identifiers_in(words, index.tags.defines), words)


async def map_ready(
    index: WorkspaceIndex, words: bool = False, meanwhile: Callable[[], object] | None = None
) -> None:
    """Wait until the first build's tags are in (the kernel: minutes), and with `words` what
    the files say too (counted after the first map), off the event loop and outside the
    service's few workers, which a waiting map request must not hold. `meanwhile` runs beside
    the wait for the tags, when there is one (what the map will need: `load_counter`)."""
    loop = asyncio.get_running_loop()
    beside = None
    if meanwhile is not None and not index.tags.ready.is_set():
        beside = loop.run_in_executor(None, _quietly, meanwhile)
    for ready in (index.tags.ready, index.tags.words_ready) if words else (index.tags.ready,):
        if not ready.is_set():
            await loop.run_in_executor(None, ready.wait)
    if beside is not None:
        await beside
    index.check_open()  # a stop wakes the waiters: they are answered with Stopping


def _quietly(work: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # (the request meets it again, and answers with it)
        work()


def load_counter(workspaces: Workspaces, data: SessionData) -> None:
    """The counter the session's map is fitted with, made ready: an exact one loads its
    vocabulary at its first count (o200k: about a second, which the kernel's first map paid
    after its tags; issue 22)."""
    counter = workspaces.service.models.counter(data.model)
    map_count(counter, data.model)("tokend")


def reads_words(index: WorkspaceIndex, data: SessionData, focus: Focus | None) -> bool:
    """Whether the session's map for `focus` (None: its default focus, `session_focus`) reads
    what files say: then it waits for them, never made with some files' words missing."""
    if focus is not None:
        return index.tags.reads_words(focus)
    has_chat = any(not read_only for _, read_only in listed(data))
    return has_chat or any(m.role == "user" for m in data.messages)  # (at worst: waits)


def budget_for(workspaces: Workspaces, data: SessionData) -> int:
    config = workspaces.service.models.config_for(data.info.workspace_uri)
    has_chat = any(not ro for _, ro in listed(data))
    return repo_map_target_tokens(data.model, has_chat, config.budget)


def session_map(
    workspaces: Workspaces,
    data: SessionData,
    budget_tokens: int | None = None,
    focus: Focus | None = None,
) -> RepoMap:
    """The session's map (slow the first time for a focus: call it off the event loop; it
    waits for the first build's tags)."""
    workspaces.prepare_rank()  # the rank's solve on a large tree (the app's: adapters.blas)
    index = session_index(workspaces, data)
    index.tags.ready.wait()  # (and the map waits for the words it reads: WorkspaceTags)
    index.check_open()
    budget = budget_tokens if budget_tokens is not None else budget_for(workspaces, data)
    chosen = focus if focus is not None else session_focus(index, data)
    counter = workspaces.service.models.counter(data.model)
    counter_id = data.model.tokenizer if counter.exact else f"estimate:{data.model.name}"
    count = map_count(counter, data.model)
    fitted = index.tags.repo_map(chosen, budget, count, counter_id or "")
    basis = "exact" if counter.exact else "estimate"
    return RepoMap(fitted.text, fitted.tokens, fitted.ranked, basis, budget)


_map_counters: dict[str, TokenCounter] = {}
_map_counters_lock = threading.Lock()


def map_count(counter: ModelCounter, model: ModelInfo) -> Callable[[str], int]:
    """What a map is fitted with: the model's exact counter without the persistent count cache
    (fitting counts a dozen or more trial maps, each a new text near the budget, that nobody
    counts again: writing each to the store took longer than counting it), else the session's
    estimate. The same counts either way."""
    tokenizer = model.tokenizer
    if not counter.exact or tokenizer is None:
        return counter.count_text
    with _map_counters_lock:
        found = _map_counters.get(tokenizer)
        if found is None:
            made = counter.uncached()
            if made is None:
                return counter.count_text
            found = _map_counters[tokenizer] = made
    return found.count
