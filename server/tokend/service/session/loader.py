"""Loading a session from the store into the owner of its state (SessionState), and bringing a
loaded one up to the stored version when another daemon sharing the database moved it."""

from __future__ import annotations

from tokend.core.errors import SessionNotFound
from tokend.core.excerpt import excerpt
from tokend.core.ports import Store
from tokend.core.session.changes import MarkRetired
from tokend.core.session.data import SessionData
from tokend.service.budget.snapshot_extras import SnapshotExtras
from tokend.service.models.session_models import SessionModels
from tokend.service.session.catch_up import catch_up
from tokend.service.session.count_upgrade import CountUpgrades
from tokend.service.session.loading import load_session_data
from tokend.service.session.state import SessionState


class SessionLoader:
    def __init__(
        self,
        store: Store,
        models: SessionModels,
        extras: SnapshotExtras,
        upgrades: CountUpgrades,
    ) -> None:
        self._store = store
        self._models = models
        self._extras = extras
        self._upgrades = upgrades

    def load(self, session_id: str, deleted: bool = False) -> SessionState:
        """The owner of the session as stored now (a soft-deleted one too with `deleted`)."""
        data, retired = self._read(session_id, deleted, later=True)
        workspace = data.info.workspace_uri
        models = self._models
        state = SessionState(
            data,
            self._store,
            lambda: models.config_for(workspace),
            self._extras.decorate,
            reload=lambda: self._catch_up(state),
            settings_key=lambda: models.settings_stamps(workspace),
        )
        if retired is not None:  # a repair of an older store, written by the session's owner
            state.apply(retired)
        self._upgrades.resume(state, models.counter(data.model))  # counts a load left estimated
        return state

    def load_data(self, session_id: str) -> SessionData:
        """The session as stored now (safe in a worker thread)."""
        return self._read(session_id)[0]

    def _catch_up(self, state: SessionState) -> SessionData:
        """The loaded session brought up to the stored version: the new messages alone when
        other daemons only appended, else a whole reload (safe in a worker thread)."""
        data = state.data
        counter = self._models.counter(data.model)
        return catch_up(self._store.messages, data, counter, lambda: self.load_data(state.id))

    def _read(
        self, session_id: str, deleted: bool = False, *, later: bool = False
    ) -> tuple[SessionData, MarkRetired | None]:
        """The session as stored now (a deleted one too with `deleted`), and the repair its
        loading found for its owner to apply (`later`: count_upgrade.loaded_counts)."""
        store = self._store
        info = (
            store.get_session_including_deleted(session_id)
            if deleted
            else store.get_session(session_id)
        )
        if info is None:
            raise SessionNotFound(
                f"no session {excerpt(session_id)}: create one with session/create, or list them with session/list",
                {"sessionId": excerpt(session_id)},
            )
        model = self._models.model_info(info)
        return load_session_data(store, info, model, self._models.counter(model), later=later)
