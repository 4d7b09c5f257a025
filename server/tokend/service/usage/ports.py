"""The service as the usage monitor sees it: the few parts of the bundle it calls, as a
`typing.Protocol` the composition root's bundle (service.service.TokendService) has."""

from __future__ import annotations

from typing import Protocol

from tokend.core.ports import Clock, Store
from tokend.core.settings.tables import TokendConfig
from tokend.service.models.session_models import SessionModels
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.sessions import Sessions


class UsageService(Protocol):
    store: Store  # past calls, read at start (load_past)
    clock: Clock
    config: TokendConfig  # the user's: [spend] and [rate] are user settings
    models: SessionModels
    listeners: SnapshotListeners
    sessions: Sessions
