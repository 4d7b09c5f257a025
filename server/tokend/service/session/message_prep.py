"""A message made ready to append: validated against the session, its tool results gated
(core.session.gates), counted, checked against the input limit, dated and priced. Pure of session
state: safe in a worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from tokend.core.errors import InvalidParams, MessageTooLarge, UnknownModel
from tokend.core.models.catalog import ModelInfo
from tokend.core.ports import Clock
from tokend.core.session.changes import AppendMessage
from tokend.core.session.data import SessionData
from tokend.core.session.gates import gate_parts
from tokend.core.types import Message, Part, Role, StoredPart, Usage
from tokend.core.usage.pricing import call_cost_usd
from tokend.service.models.session_models import SessionModels
from tokend.service.session.count_upgrade import first_counts
from tokend.service.session.message_checks import check_message
from tokend.service.session.sessions import new_id


class MessagePrep:
    def __init__(self, models: SessionModels, clock: Clock) -> None:
        self._models = models
        self._clock = clock

    def prepare(
        self,
        data: SessionData,
        role: Role,
        parts: Sequence[Part],
        usage: Usage | None,
        model: str | None,
        duration_ms: int | None = None,
        message_id: str | None = None,
        at: datetime | None = None,
        later: bool = False,
    ) -> AppendMessage:
        """Validate, gate and count a message (pure of session state; safe in a worker
        thread). `duration_ms` (an assistant reply's request to completion) dates the message
        from its request; `at` dates it when it was written elsewhere (an agent's transcript:
        the session's time figures are then the transcript's, with no API time). Tool results a
        gate keeps out (core.session.gates) are counted as the model sees them; their originals ride on
        the change, to be stored with the message. `later`: service.session.count_upgrade.first_counts."""
        check_message(data, role, parts, usage)
        if duration_ms is not None and role != "assistant":
            raise InvalidParams(
                f"message.durationMs on a {role} message: it is how long an assistant reply "
                "took, from its request to its completion"
            )
        gated = gate_parts(parts, self._models.config_for(data.info.workspace_uri).tool_output)
        originals = {g.part.ref: g.original for g in gated if g.part.ref is not None}
        shown = {g.index: g.part for g in gated}
        parts = [shown.get(i, p) for i, p in enumerate(parts)]
        limit = self._models.input_limit(data)
        counts = first_counts(
            self._models.counter(data.model), role, parts, usage, limit, later=later
        )
        if counts.total > limit:
            size = f"at least {counts.total:,}" if counts.partial else f"{counts.total:,}"
            raise MessageTooLarge(
                f"the message is {size} tokens but a {data.model.name} request holds at "
                f"most {limit:,} input tokens: split it, or attach the file by path",
                {"tokens": counts.total, "limit": limit, "partial": counts.partial},
            )
        now = self._clock.now()
        stored = tuple(  # an estimate is no part's count: a reload counts it (kill -9)
            StoredPart(id=new_id(), part=p, tokens=None if counts.estimated else t)
            for p, t in zip(parts, counts.tokens, strict=True)
        )
        priced = self.priced_model(data, model)
        message = Message(
            id=message_id or new_id(),
            session_id=data.id,
            role=role,
            parts=stored,
            created_at=at or (now - timedelta(milliseconds=duration_ms) if duration_ms else now),
            model=model or (data.info.model if role == "assistant" else None),
            usage=usage,
            cost_usd=call_cost_usd(priced, usage, parts) if usage else None,
            completed_at=(at if at is not None else now) if usage or duration_ms else None,
        )
        return AppendMessage(message, counts, tool_outputs=originals)

    def priced_model(self, data: SessionData, model: str | None) -> ModelInfo:
        """The model a call is priced with: the one the message names when the catalog knows
        it, else the session's (a name like "claude-opus-4-6[1m]" must not lose the turn)."""
        if not model:
            return data.model
        try:
            return self._models.catalog_for(data.info.workspace_uri).get(model)
        except UnknownModel:
            base = model.split("[", 1)[0]
            found = self._models.catalog_for(data.info.workspace_uri).find(base)
            return found or data.model
