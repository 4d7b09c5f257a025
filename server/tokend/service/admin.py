"""Session management: soft delete, restore, rename, reload, listings with their gauges.

Behind session/delete, /restore, /rename, /reload and `tokend sessions`. Nothing is ever
removed from the store: a deleted session only gets deleted_at, and restoring clears it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from tokend.core.errors import InvalidParams, SessionNotFound
from tokend.core.excerpt import excerpt
from tokend.core.snapshot import BudgetSnapshot
from tokend.core.types import SessionInfo
from tokend.service.service import TokendService

MAX_TITLE_CHARS = 200
GAUGE_KEY = "gauge"  # session extra: the gauge figures persisted with each change


@dataclass(frozen=True)
class Gauge:
    """A session's gauge as a listing shows it (tokens; percent of the window)."""

    used_tokens: int
    used_percentage: float
    context_window: int
    estimated: bool


def delete_session(service: TokendService, session_id: str) -> SessionInfo:
    """Soft-delete: set deleted_at (kept when already deleted) and drop the session from memory.
    Its messages stay in the store; `restore_session` brings it back."""
    info = _any_session(service, session_id)
    if info.deleted_at is None:
        info = replace(info, deleted_at=service.clock.now())
        service.store.update_session(session_id, deleted_at=info.deleted_at)
    forget_session(service, session_id)
    return info


def restore_session(service: TokendService, session_id: str) -> SessionInfo:
    """Clear deleted_at; a session that is not deleted is returned as is."""
    info = _any_session(service, session_id)
    if info.deleted_at is not None:
        service.store.update_session(session_id, deleted_at=None)
        info = replace(info, deleted_at=None)
    return info


def rename_session(service: TokendService, session_id: str, title: str) -> SessionInfo:
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
    return service.update_info(session_id, title=title)


def list_sessions(
    service: TokendService, workspace_uri: str | None, *, deleted: bool = False
) -> list[SessionInfo]:
    """The workspace's sessions (all workspaces when None), newest updated first; with `deleted`,
    the soft-deleted ones instead, most recently deleted first."""
    if deleted:
        return service.store.list_deleted_sessions(workspace_uri)
    return service.list_sessions(workspace_uri)


def session_gauge(service: TokendService, info: SessionInfo) -> Gauge | None:
    """The gauge persisted in the session's extra when there is one, else the live snapshot's
    (loads the session); None for a deleted session without persisted figures."""
    persisted = _persisted_gauge(info.extra.get(GAUGE_KEY))
    if persisted is not None or info.deleted_at is not None:
        return persisted
    s = service.snapshot(info.id)
    return Gauge(s.used_tokens, s.used_percentage, s.context_window, s.estimated)


def set_session_extra(service: TokendService, session_id: str, key: str, value: Any) -> None:
    """Set one key of the session's extra, through the session's owner (one transaction)."""
    service.update_info(session_id, extra={key: value})


def reload_session(service: TokendService, session_id: str) -> BudgetSnapshot:
    """Read the session again from the store (after another process changed it there)."""
    forget_session(service, session_id)
    return service.snapshot(session_id)


def forget_session(service: TokendService, session_id: str) -> None:
    """Drop the session's in-memory state (it reloads from the store on its next request)."""
    service.forget(session_id)


def _any_session(service: TokendService, session_id: str) -> SessionInfo:
    info = service.store.get_session_including_deleted(session_id)
    if info is None:
        raise SessionNotFound(
            f"no session {excerpt(session_id)}: list them with `tokend sessions` "
            "(`--all-workspaces`, `--deleted`) or session/list"
        )
    return info


def _persisted_gauge(raw: Any) -> Gauge | None:
    """extra["gauge"] = {usedTokens, usedPercentage, contextWindow, estimated, version}; None
    when absent or malformed (then the caller computes the figures)."""
    if not isinstance(raw, dict):
        return None
    used, pct, window = raw.get("usedTokens"), raw.get("usedPercentage"), raw.get("contextWindow")
    if not (_is_count(used) and _is_count(window) and isinstance(pct, int | float)):
        return None
    return Gauge(used, float(pct), window, bool(raw.get("estimated", False)))


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
