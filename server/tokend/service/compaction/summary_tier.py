"""The summary of the summarize and full tiers (service.compaction.tiers): written (a model's
narrative asked once, the rest in a worker thread), fitted to the input limit (full), checked
(service.compaction.quality), and the line its action reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tokend.core.compaction.history_record import Record
from tokend.core.compaction.plan import WindowSplit
from tokend.core.session.changes import Change
from tokend.core.session.data import SessionData
from tokend.core.session.evolve import evolve
from tokend.core.types import CompactionPart, Message
from tokend.service.compaction.ports import CompactionService
from tokend.service.compaction.quality import checked_summary
from tokend.service.compaction.summarizers import (
    AskClient,
    Narrative,
    WrittenSummary,
    model_narrative,
    write_summary,
)

FULL_FIT_ATTEMPTS = 6  # halvings of the summary's budgets before full gives up fitting


class SummaryRequest(Protocol):
    """What the summary takes from the compaction's request (tiers.CompactRequest)."""

    @property
    def instructions(self) -> str | None: ...

    @property
    def ask_client(self) -> AskClient | None: ...


def projected_tokens(data: SessionData, change: Change) -> int:
    """The gauge's used tokens once `change` is applied to `data`."""
    return evolve(data, change).data.used_tokens()[0]


async def fitted_summary(
    service: CompactionService,
    data: SessionData,
    split: WindowSplit,
    budgets: tuple[int, int],
    request: SummaryRequest,
    limit: int,
    full: bool,
    history: Sequence[Message],
) -> tuple[WrittenSummary, int, str]:
    """The summary (a model's narrative asked once, the rest written in a worker thread), the
    gauge it leaves and the quality check's clause (service.compaction.quality); for full, budgets halved
    until the context fits the input limit (the oldest items go first). `budgets`: the
    summary's target and the user's words' tokens."""
    target, words = budgets
    narrative: Narrative = await model_narrative(
        service,
        data,
        split,
        target_tokens=target,
        instructions=request.instructions,
        ask_client=request.ask_client,
    )

    def write(target_tokens: int, user_words_tokens: int, told: Narrative) -> WrittenSummary:
        return write_summary(
            service,
            data,
            split,
            target_tokens=target_tokens,
            user_words_tokens=user_words_tokens,
            instructions=request.instructions,
            narrative=told,
            history=history,
        )

    attempts = FULL_FIT_ATTEMPTS if full else 1
    while True:
        written = await service.workers.run(lambda t=target, w=words: write(t, w, narrative))  # type: ignore[misc]
        after = projected_tokens(data, written.change)
        attempts -= 1
        if after <= limit or attempts <= 0:
            break
        target, words = target // 2, words // 2
    plain = Narrative(None, "extractive", narrative.steps)
    checked = await service.workers.run(
        lambda: checked_summary(
            service, data.id, data.model, split, written, words, lambda: write(target, words, plain)
        )
    )
    return checked.written, projected_tokens(data, checked.written.change), checked.note


def summary_detail(
    split: WindowSplit, written: WrittenSummary, record: Record, checked: str
) -> str:
    summarized = sum(1 for m in split.head if not m.summary)
    first = split.head[0].parts if split.head and split.head[0].summary else ()
    own = any(isinstance(sp.part, CompactionPart) and sp.part.digest for sp in first)
    merged = " (the previous summary merged in)" if own else ""
    text = (
        f"summarized {summarized} messages ({split.head_tokens:,} tokens){merged} into a "
        f"{written.change.tokens:,}-token {written.summarizer} summary; kept {len(split.tail)} "
        f"messages ({split.tail_tokens:,} tokens) verbatim; originals kept in the store"
    )
    if record.earlier:
        text += (
            f"; the user's words and the artifact index drawn from {len(record.messages)} "
            f"stored messages, {record.earlier} of them from before earlier compactions"
        )
    if record.foreign:
        text += "; the agent's own earlier summary kept as written, not as the record"
    if written.dropped:
        left_out = ", ".join(f"{n} {name}" for name, n in written.dropped.items())
        text += f"; left out for room, oldest first: {left_out}"
    text += "; " + checked
    if written.steps:
        text += "; summarizers tried: " + "; ".join(written.steps)
    return text
