"""session/compact: prune old tool output first; every action reported, nothing deleted."""

from __future__ import annotations

from dataclasses import dataclass

from tokend.core.prune import PruneConfig, plan_prune
from tokend.core.snapshot import BudgetSnapshot
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
    live = service.session(session_id)
    before = service.snapshot(session_id).used_tokens
    cfg = service.config.compaction
    actions: list[CompactAction] = []
    if cfg.prune or strategy == "prune":
        plan = plan_prune(
            live.messages,
            PruneConfig(
                protect_tokens=cfg.prune_protect_tokens,
                minimum_tokens=cfg.prune_minimum_tokens,
                protected_tools=tuple(cfg.protected_tools),
            ),
        )
        if plan.part_ids:
            service.prune_parts(session_id, plan.part_ids)
            actions.append(
                CompactAction(
                    "prune",
                    len(plan.part_ids),
                    plan.freed_tokens,
                    f"cleared {len(plan.part_ids)} old tool results "
                    f"({plan.freed_tokens:,} tokens); originals kept in the store",
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
    if not service.config.compaction.auto:
        return None
    snapshot = service.snapshot(session_id)
    if snapshot.used_tokens < snapshot.autocompact_threshold:
        return None
    outcome = compact(service, session_id, "auto")
    return outcome if any(a.kind != "skip" for a in outcome.actions) else None
