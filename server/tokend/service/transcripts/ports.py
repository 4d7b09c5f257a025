"""The service as a transcript's importer and its followers see it: the parts of the bundle
they call, and what a reply's growth (service.session.reply_growth) needs, as a
`typing.Protocol` the composition root's bundle (service.service.TokendService) has."""

from __future__ import annotations

from typing import Protocol

from tokend.service.session.appends import Appends
from tokend.service.session.ports import SessionService


class TranscriptService(SessionService, Protocol):
    appends: Appends  # each imported message is appended as a client's would be
