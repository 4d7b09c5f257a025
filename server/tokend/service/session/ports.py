"""The service as the session's use cases see it (admin, history, handoff, reply_growth): the
few parts of the bundle they call, as a `typing.Protocol`. The composition root (service/app.py)
builds the one bundle (service.service.TokendService) that has them. A package above whose
work calls these use cases takes this Protocol (the checkpointer: a rewind's history) or extends
it (service.transcripts.ports)."""

from __future__ import annotations

from typing import Protocol

from tokend.core.ports import Clock, Store
from tokend.service.models.session_models import SessionModels
from tokend.service.ports import WorkspaceFiles
from tokend.service.session.changes import SessionChanges
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.message_prep import MessagePrep
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers


class SessionService(Protocol):
    store: Store
    clock: Clock
    models: SessionModels
    workers: Workers
    listeners: SnapshotListeners
    sessions: Sessions
    prep: MessagePrep
    changes: SessionChanges
    files: WorkspaceFiles  # handoff reads the files it hands over
