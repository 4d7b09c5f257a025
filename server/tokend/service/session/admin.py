"""Session management: soft delete, restore, rename, reload, listings with their gauges.

Behind session/delete, /restore, /rename, /reload and `tokend sessions`. Nothing is ever
removed from the store: a deleted session only gets deleted_at, and restoring clears it.
"""

from __future__ import annotations

from dataclasses import replace

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams, SessionNotFound
from tokend.core.excerpt import excerpt
from tokend.core.session.changes import Delete, Restore
from tokend.core.types import ListedSession, SessionGauge, SessionInfo
from tokend.service.session.ports import SessionService

MAX_TITLE_CHARS = 200


def delete_session(service: SessionService, session_id: str) -> SessionInfo:
    """Soft-delete through the session's owner (a new version its listeners hear of), then drop
    it from memory. Its messages stay in the store; `restore_session` brings it back. Deleting a
    deleted session keeps the first deleted_at."""
    info = _any_session(service, session_id)
    if info.deleted_at is None:
        state = service.sessions.state(session_id)
        delete = Delete(service.clock.now())
        service.listeners.announce(delete, state.apply(delete))
        info = replace(info, deleted_at=state.data.info.deleted_at)
    forget_session(service, session_id)
    return info


def restore_session(service: SessionService, session_id: str) -> SessionInfo:
    """Clear deleted_at through the session's owner (a new version its listeners hear of); a
    session that is not deleted is returned as is."""
    info = _any_session(service, session_id)
    if info.deleted_at is not None:
        state = service.sessions.state(session_id, deleted=True)
        service.listeners.announce(Restore(), state.apply(Restore()))
        info = replace(info, deleted_at=None)
    return info


def rename_session(service: SessionService, session_id: str, title: str) -> SessionInfo:
    """Set the title (surrounding blanks removed; 1-200 characters) of a session not deleted."""
    title = title.strip()
    if not title or len(title) > MAX_TITLE_CHARS:
        raise InvalidParams(f"title must be 1-{MAX_TITLE_CHARS} characters, not {len(title)}")
    info = _any_session(service, session_id)
    if info.deleted_at is not None:
        raise SessionNotFound(
            f"session {session_id} is deleted: restore it first (session/restore, "
            f"`tokend sessions restore {session_id}`)"
        )
    return service.changes.update_info(session_id, title=title)


def list_sessions(
    service: SessionService, workspace_uri: str | None, *, deleted: bool = False
) -> list[ListedSession]:
    """The workspace's sessions (all workspaces when None), newest updated first; with `deleted`,
    the soft-deleted ones instead, most recently deleted first."""
    return service.sessions.list_sessions(workspace_uri, deleted=deleted)


def session_gauge(service: SessionService, info: ListedSession) -> SessionGauge | None:
    """The gauge a listing shows (service.session.sessions.listed_gauge); None for a deleted session without
    stored figures."""
    return service.sessions.listed_gauge(info)


def reload_session(service: SessionService, session_id: str) -> BudgetSnapshot:
    """Read the session again from the store (after another process changed it there)."""
    forget_session(service, session_id)
    return service.sessions.snapshot(session_id)


def forget_session(service: SessionService, session_id: str) -> None:
    """Drop the session's in-memory state (it reloads from the store on its next request)."""
    service.sessions.forget(session_id)


def _any_session(service: SessionService, session_id: str) -> SessionInfo:
    info = service.store.get_session_including_deleted(session_id)
    if info is None:
        raise SessionNotFound(
            f"no session {excerpt(session_id)}: list them with `tokend sessions` "
            "(`--all-workspaces`, `--deleted`) or session/list"
        )
    return info
