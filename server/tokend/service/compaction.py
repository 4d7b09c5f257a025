"""session/compact: prune old tool output first; every action reported, nothing deleted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokend.core.prune import PruneConfig, plan_prune
from tokend.core.snapshot import BudgetSnapshot
from tokend.core.types import Part, Role, Usage
from tokend.service.service import TokendService


@dataclass(frozen=True)
class CompactAction:
    kind: str  # "prune" | "skip"
    parts: int
    tokens_freed: int
    detail: str


@dataclass(frozen=True)
class CompactOutcome:
    before: int
    after: int
    actions: list[CompactAction]
    snapshot: BudgetSnapshot


def compact(service: TokendService, session_id: str, strategy: str = "auto") -> CompactOutcome:
    """Run the compaction tiers `strategy` allows ("prune", or "auto": every tier available)."""
    data = service.state(session_id).data
    before = service.snapshot(session_id).used_tokens
    cfg = service.config_for(data.info.workspace_uri).compaction
    actions: list[CompactAction] = []
    if cfg.prune or strategy == "prune":
        plan = plan_prune(
            data.messages,
            PruneConfig(
                protect_tokens=cfg.prune_protect_tokens,
                minimum_tokens=cfg.prune_minimum_tokens,
                protected_tools=tuple(cfg.protected_tools),
            ),
        )
        if plan.part_ids:
            service.prune_parts(session_id, plan.part_ids)
            # The results' counts less the placeholders sent instead: the gauge moves by this.
            placeholder = service.counter(data.model).pruned_tokens()
            freed = plan.freed_tokens - placeholder * len(plan.part_ids)
            actions.append(
                CompactAction(
                    "prune",
                    len(plan.part_ids),
                    freed,
                    f"cleared {len(plan.part_ids)} old tool results "
                    f"({freed:,} tokens freed); originals kept in the store",
                )
            )
        else:
            actions.append(CompactAction("skip", 0, 0, f"prune: {plan.skipped_reason}"))
    snapshot = service.snapshot(session_id)
    return CompactOutcome(before, snapshot.used_tokens, actions, snapshot)


def auto_compact(service: TokendService, session_id: str) -> CompactOutcome | None:
    """compaction.auto: prune when the gauge passes the autocompact threshold.

    None when not needed or nothing could be pruned (the snapshot then carries a warning that
    the session is over the threshold). Never silent: the caller announces what was done.
    """
    snapshot = service.snapshot(session_id)
    data = service.state(session_id).data
    if not service.config_for(data.info.workspace_uri).compaction.auto:
        return None
    if snapshot.used_tokens < snapshot.autocompact_threshold:
        return None
    outcome = compact(service, session_id, "auto")
    return outcome if any(a.kind != "skip" for a in outcome.actions) else None


@dataclass(frozen=True)
class AppendOutcome:
    message_id: str
    tokens: int  # the message as counted when appended (framing included)
    snapshot: BudgetSnapshot  # after the append (and the automatic compaction, if any)
    auto: CompactOutcome | None  # what compaction.auto did, to announce


async def append_message(
    service: TokendService,
    session_id: str,
    role: Role,
    parts: Sequence[Part],
    *,
    usage: Usage | None,
    model: str | None,
    if_version: int | None,
) -> AppendOutcome:
    """session/append: the message, then compaction.auto when the gauge passed the threshold."""
    message, snapshot, tokens = await service.append_async(
        session_id, role, parts, usage=usage, model=model, if_version=if_version
    )
    auto = auto_compact(service, session_id)
    if auto is not None:
        snapshot = auto.snapshot
    return AppendOutcome(message.id, tokens, snapshot, auto)
