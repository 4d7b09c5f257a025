"""The service as context/assemble sees it: the few parts of the bundle it calls, as a
`typing.Protocol` the composition root's bundle (service.service.TokendService) has."""

from __future__ import annotations

from typing import Protocol

from tokend.service.models.session_models import SessionModels
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers


class AssemblyService(Protocol):
    models: SessionModels
    workers: Workers
    sessions: Sessions
