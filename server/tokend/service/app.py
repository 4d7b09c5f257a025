"""The composition root: where the daemon, `tokend lsp --standalone` and the CLI are put together.

`open_app` builds, in order, the settings (every workspace's .tokend.toml over the user's
config), the store (migrated to head), the sessions (TokendService), the usage monitor (spend
limits and rate headroom in every snapshot), the workspaces (file index, session files, repo
map), the followers and, for a serving app (the daemon, `--standalone`), the checkpointer and
telemetry. Each part gets its dependencies here, as arguments; nothing attaches itself through a
module-level registry or an import, and registering a handler starts nothing. Handlers reach
the parts through the app their server holds.

Stopping runs the other way, in bounded time: `begin_stop` (on the event loop, never waiting)
tells every workspace's build, watcher batch and checkpoint walk to stop at its next file, and
whoever waits for a first index or the repo map's tags wakes up to a Stopping error; `close`
then ends the threads in order: the followers (the transcripts they import into sessions), the
workspaces (builds, watchers, their hook threads), the checkpointer's thread, telemetry (its
last export goes out), and the service itself (its workers, the store). A thread still running
after its wait is named in the log; being a daemon thread it cannot hold up the process's exit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokend.adapters import workspace_fs
from tokend.adapters.model_http import HttpWriter
from tokend.adapters.store import SqlStore, resolve_database_url
from tokend.adapters.tokenizers import ExactTokenizers
from tokend.adapters.workspace_settings import WarningsHook, WorkspaceSettings
from tokend.core.models.catalog import Catalog
from tokend.core.ports import Clock, CountCache, HttpWriterFactory, Store
from tokend.core.settings.tables import TokendConfig
from tokend.core.telemetry.settings import TelemetryConfig
from tokend.service.budget.snapshot_extras import SnapshotExtras
from tokend.service.counting.calibration import Calibration
from tokend.service.models.session_models import SessionModels
from tokend.service.ports import ExactCounters, WorkspaceFiles
from tokend.service.service import SystemClock, TokendService
from tokend.service.session.appends import Appends
from tokend.service.session.changes import SessionChanges
from tokend.service.session.count_upgrade import CountUpgrades
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.loader import SessionLoader
from tokend.service.session.message_prep import MessagePrep
from tokend.service.session.remote_feed import RemoteFeed
from tokend.service.session.sessions import Sessions
from tokend.service.telemetry.sink import start_telemetry, stop_telemetry
from tokend.service.usage.monitor import UsageMonitor
from tokend.service.workers import Workers

if TYPE_CHECKING:
    from tokend.adapters.checkpoint_store import CheckpointStore
    from tokend.adapters.workspace_cache import WorkspaceCache
    from tokend.service.app_workspaces import WorkspaceParts
    from tokend.service.checkpoints.recorder import Checkpoints
    from tokend.service.transcripts.followers import Followers
    from tokend.service.workspace.registry import Workspaces

log = logging.getLogger(__name__)


@dataclass(eq=False)
class App:
    """One daemon's (or one command's) parts, each built once and handed what it needs."""

    service: TokendService
    usage: UsageMonitor
    parts: WorkspaceParts | None = None  # a serving app's, or a command's that opens folders
    telemetry: Any = None  # the OpenTelemetry sink when `[telemetry] exporters` names one

    @property
    def workspaces(self) -> Workspaces:
        return self._parts().workspaces

    @property
    def followers(self) -> Followers:
        return self._parts().followers

    @property
    def optional_checkpoints(self) -> Checkpoints | None:
        return self.parts.checkpoints if self.parts is not None else None

    @property
    def checkpoints(self) -> Checkpoints:
        """The checkpointer (every serving app has one)."""
        if self.optional_checkpoints is None:
            raise RuntimeError("this app was built without checkpoints (open_app(serving=True))")
        return self.optional_checkpoints

    def _parts(self) -> WorkspaceParts:
        if self.parts is None:
            raise RuntimeError("this app was built without workspaces (open_app(serving=True))")
        return self.parts

    def following_keeps_alive(self) -> bool:
        """Whether a followed transcript keeps the daemon up with no connection (followers)."""
        return self.parts is not None and self.parts.followers.keep_daemon_up()

    def check_store(self) -> str | None:
        """SQLite's integrity check of the store, bounded in time: the damage found, logged
        (None when sound, or for a store that is not SQLite)."""
        store = self.service.store
        return store.check_integrity() if isinstance(store, SqlStore) else None

    def start(self) -> None:
        """Begin the app's own background work: the restores a kill interrupted are settled on
        the checkpoint thread, first there. Call it on the event loop when there is one (the
        conversation of a "both" rewind is rolled forward on it, and its clients are told)."""
        if self.optional_checkpoints is not None:
            from tokend.service.checkpoints import restore_journal

            restore_journal.start(self.optional_checkpoints)

    def begin_stop(self) -> None:
        """Tell the background work to stop (no waiting: on the event loop)."""
        if self.parts is not None:
            self.parts.workspaces.begin_close()

    def close(self, *, save_calibration: bool = True) -> None:
        """End the background work and close the service (call it once requests are answered;
        on the event loop's thread when followers run there). A command that calibrates nothing
        passes save_calibration=False: a running daemon may have saved a newer one."""
        self.begin_stop()
        if self.parts is not None:
            self.parts.remeasures.close()
            self.parts.followers.close()
            self.parts.workspaces.close()
            if self.parts.checkpoints is not None:
                self.parts.checkpoints.close()
        stop_telemetry(self.telemetry, self.usage)
        self.telemetry = None
        self.usage.close()
        if save_calibration:
            self.service.close()
        else:
            self.service.store.close()


def open_app(
    workspace: Path | None = None,
    database_url: str | None = None,
    *,
    on_warnings: WarningsHook | None = None,
    serving: bool = False,
    checkpoint_store: CheckpointStore | None = None,
) -> App:
    """The app on the store of `database_url` (else the settings' `database_url`).

    `workspace`'s .tokend.toml applies to sessions without a workspace of their own; every
    workspace's settings are read from its own .tokend.toml over the user's config, and read
    again when either file changes. `on_warnings` hears of settings problems (the daemon tells
    the workspace's clients); without it they are logged. A `serving` app (the daemon,
    `--standalone`) also checkpoints its workspaces and starts telemetry; a command that reads
    or writes checkpoints passes its `checkpoint_store`."""
    service = open_service(workspace, database_url, on_warnings=on_warnings)
    if serving and checkpoint_store is None:
        from tokend.adapters.checkpoint_store import CheckpointStore

        checkpoint_store = CheckpointStore()  # the user's settings: one store per user
    return assemble_app(service, serving=serving, checkpoint_store=checkpoint_store)


def open_service(
    workspace: Path | None = None,
    database_url: str | None = None,
    *,
    on_warnings: WarningsHook | None = None,
) -> TokendService:
    """The sessions alone, on the store migrated to head (open_app's first half): what a
    benchmark or a test of the session core needs. Its snapshots carry no spend warnings nor
    rate headroom (the usage monitor is the app's); commands use open_app."""
    settings = WorkspaceSettings(on_warnings=on_warnings)
    base_uri = workspace.resolve().as_uri() if workspace else None
    base = settings.for_workspace(base_uri)
    if on_warnings is None:
        for warning in base.warnings:
            log.warning("config: %s", warning)
    store = SqlStore.open(resolve_database_url(database_url or base.config.database_url))
    return build_service(
        store,
        base.catalog,
        base.config,
        cache=store.count_cache,
        workspace_catalog=lambda uri: settings.for_workspace(uri or base_uri).catalog,
        workspace_config=lambda uri: settings.for_workspace(uri or base_uri).config,
        forget_settings=lambda uri: settings.forget(uri or base_uri),
        settings_key=lambda uri: settings.stamps(uri or base_uri),
    )


def build_service(
    store: Store,
    catalog: Catalog,
    config: TokendConfig,
    *,
    cache: CountCache | None = None,
    clock: Clock | None = None,
    workspace_catalog: Callable[[str], Catalog] | None = None,
    workspace_config: Callable[[str | None], TokendConfig] | None = None,
    forget_settings: Callable[[str | None], None] | None = None,
    settings_key: Callable[[str | None], list[Any] | None] | None = None,
    http_writer: HttpWriterFactory = HttpWriter,
    files: WorkspaceFiles = workspace_fs,
    tokenizers: ExactCounters | None = None,
) -> TokendService:
    """The session core's parts on `store`, each handed the others it needs (service.service).
    The workspace_* callables give a workspace's catalog and settings (the user's without)."""
    clock = clock or SystemClock()
    tokenizers = tokenizers or ExactTokenizers()
    calibration = Calibration(store.calibration)
    models = SessionModels(
        catalog,
        config,
        calibration.calibrator,
        cache,
        tokenizers=tokenizers,
        workspace_catalog=workspace_catalog,
        workspace_config=workspace_config,
        forget_settings=forget_settings,
        settings_key=settings_key,
    )
    workers = Workers()
    listeners = SnapshotListeners()
    extras = SnapshotExtras()
    upgrades = CountUpgrades(
        workers.run, workers.submit, listeners.announce, calibration.calibrator
    )
    loader = SessionLoader(store, models, extras, upgrades)
    sessions = Sessions(store, models, loader, listeners, clock)
    prep = MessagePrep(models, clock)
    appends = Appends(
        store.messages, sessions, models, prep, workers, listeners, calibration, upgrades
    )
    changes = SessionChanges(sessions, models, listeners, workers, clock)
    remote = RemoteFeed(store.changes, sessions, listeners, workers)
    return TokendService(
        store, catalog, config, clock, models, workers, listeners, extras, calibration,
        upgrades, sessions, prep, appends, changes, remote, http_writer, files,
    )  # fmt: skip


def assemble_app(
    service: TokendService,
    *,
    serving: bool = False,
    checkpoint_store: CheckpointStore | None = None,
    workspace_cache: WorkspaceCache | None = None,
) -> App:
    """The parts around a service already built (open_app's second half; tests give theirs).

    The usage monitor always (spend warnings and rate headroom in every snapshot); the
    workspace parts for a serving app or one given a checkpoint store or a workspace cache
    (kept in the user's workspace cache unless one is given); telemetry when serving."""
    usage = UsageMonitor(service)
    service.extras.add_warnings(usage.snapshot_warnings)
    service.extras.set_rate_source(usage.snapshot_rate)
    for state in service.sessions.loaded_states():  # loaded before: rebuilt with them
        state.refresh()
    if serving:
        usage.load_past()  # before the first request; a command reads it only if it must
        if isinstance(service.store, SqlStore):
            service.store.prepare_reads()  # compiled now, not in the first request
    parts = None
    if serving or checkpoint_store is not None or workspace_cache is not None:
        from tokend.service.app_workspaces import workspace_parts

        parts = workspace_parts(service, checkpoint_store, workspace_cache)
    telemetry = start_telemetry(service.config.telemetry, usage, _otel_sink) if serving else None
    return App(service, usage, parts, telemetry)


def _otel_sink(config: TelemetryConfig, version: str) -> Any:
    """The OpenTelemetry sink of `config` (ImportError without the `otel` extra installed)."""
    from tokend.adapters.telemetry import OtelSink

    return OtelSink(config, version)
