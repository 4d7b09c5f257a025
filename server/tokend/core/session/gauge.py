"""The gauge of a session: its immutable BudgetSnapshot, built from SessionData alone.

One number, `used_tokens`, drives the status bar and the compaction decision alike.
"""

from __future__ import annotations

from tokend.core.budget.limits import BudgetConfig, CompactionConfig, autocompact_threshold
from tokend.core.budget.snapshot import BudgetSnapshot, breakdown, used_percentage
from tokend.core.session.data import SessionData


def gauge_snapshot(
    data: SessionData, compaction: CompactionConfig, budget: BudgetConfig
) -> BudgetSnapshot:
    """The snapshot of `data` under the session's workspace settings (the two tables it reads:
    `compaction` and `budget`)."""
    used, estimated = data.used_tokens()
    basis = "exact" if data.measured_exact else "estimate"
    # Counted whole, the messages' share includes the reply priming (framing of the request).
    messages_tokens = used - sum(data.measured.values()) if estimated else None
    # A big message appended with its estimate, its exact count still to come.
    pending = any(m in data.message_tokens for m in data.pending_exact)
    items, warnings = breakdown(
        used, data.measured, messages_tokens, measured_basis=basis, messages_estimated=pending
    )
    model = data.model
    window = model.context_window
    threshold = autocompact_threshold(model, compaction, budget)
    if used >= threshold:
        warnings += (
            f"{used:,} tokens is over the autocompact threshold ({threshold:,}): "
            "compact the session (session/compact) or start a new one",
        )
    gated = data.log.gated  # kept as messages are appended: no walk of the history
    if gated.count:  # never silent: the model sees less than these outputs
        warnings += (
            f"{gated.count} tool result(s) ({gated.chars:,} characters) too large to send whole are "
            "shown to the model as a preview; toolOutput/read returns the originals",
        )
    call = data.anchor.call if data.anchor is not None else None
    return BudgetSnapshot(
        session_id=data.id,
        model=model.name,
        context_window=window,
        max_output_tokens=model.max_output_tokens,
        used_tokens=used,
        remaining_tokens=max(0, window - used),
        used_percentage=used_percentage(used, window),
        estimated=estimated,
        breakdown=items,
        autocompact_threshold=threshold,
        compactions=data.compactions,
        cost_total_usd=round(sum(data.cost_by_model.values()), 6),
        cost_by_model=dict(data.cost_by_model),
        totals=data.totals,
        last_call=call,
        last_estimate_error_pct=data.errors[-1].error_pct if data.errors else None,
        version=data.version,
        warnings=warnings,
        times=data.times.figures(),
        compact_with="provider" if model.provider_compaction else "tokend",
        prompt_cache=data.prompt_cache,
    )
