"""Settings per workspace: the user's config.toml under the workspace's .tokend.toml, kept
current while the daemon runs. Files read and stamped: an adapter, which the composition root
(service/app.py) hands to the session core as the callables service.models takes.

`WorkspaceSettings.for_workspace(uri)` answers from a cache. At most once per `recheck_seconds`
per workspace it stats the two files, and reads them again when either one's stamp (mtime,
size, inode) changed: a model declared in .tokend.toml while the daemon runs is known at the
next request a second later. Each result is a frozen `Settings`; a reader never sees half a
reload.

Every problem (a file that does not parse, an unknown key, an invalid value, a model override
the catalog refuses, a model window that leaves no room) is a warning naming the file and the
key; the value below it is used. Warnings a reload finds that the workspace's previous settings
did not have are passed to `on_warnings(workspace_uri, warnings)`, for the daemon to tell that
workspace's clients. It is called on the thread that asked, after the cache lock is released.

Catalogs come from adapters.catalog_source.load_catalog (which also logs the override warnings
it finds, without the file's name). Workspaces whose .tokend.toml declares no model share the
user's catalog.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokend.adapters.catalog_source import LitellmEntries, load_catalog
from tokend.adapters.config_files import (
    ConfigFile,
    ConfigSource,
    merge_files,
    read_config_file,
    user_config_path,
    workspace_config_path,
)
from tokend.adapters.config_paths import FileStamp, file_stamp
from tokend.core.models.catalog import Catalog
from tokend.core.settings.tables import TokendConfig, room_problems
from tokend.core.workspace.files import workspace_folder

RECHECK_SECONDS = 1.0

WarningsHook = Callable[[str | None, tuple[str, ...]], None]


@dataclass(frozen=True, slots=True)
class Settings:
    """What applies in one workspace. `origins` maps a dotted key ("budget.output_reserve_cap",
    'models."NAME".context_window', "database_url") to the layer that set it ("user",
    "workspace", "environment"); a key that is absent has its default. `rejected` maps a key
    whose value a layer set but that was refused (the warnings say why) to that layer."""

    config: TokendConfig
    catalog: Catalog
    warnings: tuple[str, ...]
    sources: tuple[ConfigSource, ...]
    origins: Mapping[str, str]
    rejected: Mapping[str, str] = field(default_factory=dict)

    def source(self, layer: str) -> ConfigSource | None:
        return next((s for s in self.sources if s.layer == layer), None)


@dataclass(slots=True)
class _Cached:
    settings: Settings
    stamps: tuple[FileStamp | None, FileStamp | None]  # user file, workspace file
    checked_at: float  # clock seconds


@dataclass(frozen=True, slots=True)
class _UserLayer:
    """The user's file, and the catalog with its [models] tables: shared by every workspace
    whose .tokend.toml declares no model."""

    file: ConfigFile
    catalog: Catalog


class WorkspaceSettings:
    """Settings per workspace URI (None: no workspace, the user's config alone)."""

    def __init__(
        self,
        *,
        user_path: Path | None = None,
        environ: Mapping[str, str] | None = None,
        entries: LitellmEntries | None = None,
        clock: Callable[[], float] = time.monotonic,
        recheck_seconds: float = RECHECK_SECONDS,
        on_warnings: WarningsHook | None = None,
    ) -> None:
        """`user_path` None: the platform's (XDG) user config file. `environ` None: the
        process environment (TOKEND_DATABASE_URL). `entries` None: the process's copy of the
        catalog JSON, read on first use. `clock` is monotonic seconds."""
        self._user_path = (user_path or user_config_path()).absolute()
        self._environ = environ
        self._entries = entries
        self._clock = clock
        self._recheck_seconds = recheck_seconds
        self.on_warnings = on_warnings
        self._lock = threading.Lock()
        self._user: _UserLayer | None = None
        self._cache: dict[str | None, _Cached] = {}

    @property
    def user_path(self) -> Path:
        return self._user_path

    def for_workspace(self, workspace_uri: str | None) -> Settings:
        """The workspace's settings, read again if a file changed (checked at most once per
        `recheck_seconds`)."""
        with self._lock:
            now = self._clock()
            cached = self._cache.get(workspace_uri)
            if cached is not None and now - cached.checked_at < self._recheck_seconds:
                return cached.settings
            workspace_path = self._workspace_path(workspace_uri)
            user_stamp = file_stamp(self._user_path)
            stamps = (user_stamp, file_stamp(workspace_path) if workspace_path else None)
            if cached is not None and cached.stamps == stamps:
                cached.checked_at = now
                return cached.settings
            settings = self._read(self._user_layer(user_stamp), workspace_path)
            self._cache[workspace_uri] = _Cached(settings, stamps, now)
        before = cached.settings.warnings if cached is not None else ()
        new = tuple(w for w in settings.warnings if w not in before)
        if new and self.on_warnings is not None:
            self.on_warnings(workspace_uri, new)
        return settings

    def stamps(self, workspace_uri: str | None) -> list[Any] | None:
        """The files the workspace's cached settings were read from, as [path, stamp or None]
        pairs (user file first), without looking at them again; None when none is cached.
        A session row keeps them beside its line (core.statusline.row)."""
        with self._lock:
            cached = self._cache.get(workspace_uri)
        if cached is None:
            return None
        return [[str(s.path), s.stamp and list(s.stamp)] for s in cached.settings.sources]

    def forget(self, workspace_uri: str | None) -> None:
        """Drop a workspace's cached settings (the next request reads its files)."""
        with self._lock:
            self._cache.pop(workspace_uri, None)

    # -- reading ------------------------------------------------------------------------------

    @staticmethod
    def _workspace_path(workspace_uri: str | None) -> Path | None:
        folder = workspace_folder(workspace_uri) if workspace_uri else None
        return workspace_config_path(folder) if folder is not None else None

    def _user_layer(self, stamp: FileStamp | None) -> _UserLayer:
        """The user's file, read again only when its stamp is no longer `stamp`."""
        user = self._user
        if user is None or user.file.source.stamp != stamp:
            file = read_config_file("user", self._user_path)
            catalog = load_catalog(file.document, entries=self._entries)
            user = self._user = _UserLayer(file, catalog)
        return user

    def _read(self, user: _UserLayer, workspace_path: Path | None) -> Settings:
        files = [user.file]
        catalog = user.catalog
        catalog_warnings = [f"{user.file.source.path}: {w}" for w in catalog.warnings]
        if workspace_path is not None:
            workspace = read_config_file("workspace", workspace_path)
            files.append(workspace)
            if _models(workspace):
                catalog = load_catalog(
                    user.file.document, workspace.document, entries=self._entries
                )
                # The user layer is applied first, so its warnings come first.
                extra = catalog.warnings[len(user.catalog.warnings) :]
                catalog_warnings += [f"{workspace.source.path}: {w}" for w in extra]
        merged = merge_files(files, self._environ)
        warnings = [*merged.warnings, *catalog_warnings]
        for name in merged.config.models:
            info = catalog.find(name)
            if info is None:
                continue  # the catalog said why
            where = _declared_in(files, name)
            warnings += [
                f'{where}: [models."{name}"] {p}' for p in room_problems(info, merged.config)
            ]
        return Settings(
            config=merged.config,
            catalog=catalog,
            warnings=tuple(dict.fromkeys(warnings)),  # the merge and the catalog may agree
            sources=tuple(file.source for file in files),
            origins=merged.origins,
            rejected=merged.rejected,
        )


def _models(file: ConfigFile) -> Mapping[str, object]:
    models = file.document.get("models", {})
    return models if isinstance(models, Mapping) else {}


def _declared_in(files: list[ConfigFile], name: str) -> Path:
    """The last file whose [models."NAME"] table applies (the workspace's beats the user's)."""
    found = [f.source.path for f in files if name in _models(f)]
    return found[-1] if found else files[0].source.path
