"""TokendService: the session core every connection talks to, as parts of one role each.

The composition root (service.app.build_service) builds the parts and hands each the others it
needs; a caller takes the part it works with. Only the root imports this bundle: each package
sees it through a `typing.Protocol` of the few parts it calls (service.session.ports,
compaction.ports, assembly.ports, transcripts.ports, usage.ports, workspace.ports), so
import-linter can hold the packages' layering (pyproject.toml):

- `models`: a session's settings, model, token counter and input limit (service.models.session_models);
- `sessions`: the loaded sessions, each owned by its SessionState, and listings (service.session.sessions);
- `appends`: session/append's use case (service.session.appends), with `prep` validating and counting;
- `changes`: compaction boundaries, pruning, measured context, info (service.session.changes);
- `listeners`: who hears of a session's changes (service.session.listeners), `extras` what every
  snapshot carries from outside the conversation (service.budget.snapshot_extras);
- `calibration`, `upgrades`: what estimates learn, and the exact counts made later;
- `workers`: the threads beside the event loop; `remote`: other daemons' changes;
- `http_writer`, `files`: the adapters the root handed in (service.ports, core.ports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from tokend.core.models.catalog import Catalog
from tokend.core.ports import Clock, HttpWriterFactory, Store
from tokend.core.settings.tables import TokendConfig
from tokend.service.budget.snapshot_extras import SnapshotExtras
from tokend.service.counting.calibration import Calibration
from tokend.service.models.session_models import SessionModels
from tokend.service.ports import WorkspaceFiles
from tokend.service.session.appends import Appends
from tokend.service.session.changes import SessionChanges
from tokend.service.session.count_upgrade import CountUpgrades
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.message_prep import MessagePrep
from tokend.service.session.remote_feed import RemoteFeed
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(eq=False)
class TokendService:
    store: Store
    catalog: Catalog  # the user's (a workspace's: models.catalog_for)
    config: TokendConfig  # the user's (a workspace's: models.config_for)
    clock: Clock
    models: SessionModels
    workers: Workers
    listeners: SnapshotListeners
    extras: SnapshotExtras
    calibration: Calibration
    upgrades: CountUpgrades
    sessions: Sessions
    prep: MessagePrep
    appends: Appends
    changes: SessionChanges
    remote: RemoteFeed
    http_writer: HttpWriterFactory  # a summarizer chain's openai / anthropic steps
    files: WorkspaceFiles  # a workspace's files, read and written without leaving it
    # (session id, summarizer step) -> its failures in a row (service.compaction.summarizers' breaker)
    summarizer_failures: dict[tuple[str, str], int] = field(default_factory=dict)

    def close(self) -> None:
        """Store the exact counts under way, end the workers, save the calibration, close the
        store."""
        self.upgrades.finish()
        self.workers.shutdown()
        self.calibration.save()
        self.store.close()
