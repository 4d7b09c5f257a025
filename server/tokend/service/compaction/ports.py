"""The service as compaction sees it (tiers, summarizers, quality, auto_compaction): the few
parts of the bundle it calls, as a `typing.Protocol` the composition root's bundle
(service.service.TokendService) has."""

from __future__ import annotations

from typing import Protocol

from tokend.core.ports import Clock, HttpWriterFactory, Store
from tokend.service.models.session_models import SessionModels
from tokend.service.session.appends import Appends
from tokend.service.session.changes import SessionChanges
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers


class CompactionService(Protocol):
    store: Store
    clock: Clock
    models: SessionModels
    workers: Workers
    sessions: Sessions
    changes: SessionChanges
    appends: Appends  # auto_compaction: the append the compaction follows
    http_writer: HttpWriterFactory  # a summarizer chain's openai / anthropic steps
    # (session id, summarizer step) -> its failures in a row (summarizers' breaker)
    summarizer_failures: dict[tuple[str, str], int]
