"""Changes made by other daemons sharing a PostgreSQL database, as they commit.

Every versioned change's transaction runs `pg_notify('tokend_sessions', payload)`; PostgreSQL
delivers the notification to every listener when (and only if) the transaction commits, in
commit order. The payload is small JSON, {"s": session id, "v": version, "o": origin}: far under
PostgreSQL's 8,000-byte limit whatever the session. `origin` tells a daemon its own changes.

`ChangeFeed.listen` keeps one dedicated connection (psycopg 3, autocommit) in a daemon thread,
waiting on notifications; after a lost connection it reconnects with a growing delay and reports
`None` (everything may have changed meanwhile: reload what is loaded).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, Select, func, select

CHANNEL = "tokend_sessions"
WAIT_S = 0.5  # how long one wait for notifications blocks; the stop flag is checked between
RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)
FIRST_LISTEN_S = 10.0  # `listen` returns once its connection listens, or after this

log = logging.getLogger(__name__)
OnChange = Callable[[str | None, int], None]


class ChangeFeed:
    def __init__(self, engine: Engine) -> None:
        self.origin = uuid.uuid4().hex[:12]
        self._engine = engine

    def notify_statement(self, session_id: str, version: int) -> Select[Any]:
        return select(func.pg_notify(CHANNEL, self.payload(session_id, version)["payload"]))

    def payload(self, session_id: str, version: int) -> dict[str, str]:
        """The notification's payload of a change, as a statement's parameter "payload"."""
        return {"payload": json.dumps({"s": session_id, "v": version, "o": self.origin})}

    def listen(self, on_change: OnChange) -> Callable[[], None]:
        """Call `on_change(session_id, version)` (from a thread) for each change another daemon
        commits, and `on_change(None, 0)` after a reconnect; returns the stop function."""
        stop, first_try = threading.Event(), threading.Event()
        thread = threading.Thread(
            target=self._run, args=(on_change, stop, first_try), name="tokend-feed", daemon=True
        )
        thread.start()
        # A change committed before the connection listens is never heard: returned only once
        # it listens (or its first try failed: then on_change(None, 0) follows the reconnect)
        first_try.wait(FIRST_LISTEN_S)

        def stop_listening() -> None:
            stop.set()
            thread.join(timeout=WAIT_S * 4)

        return stop_listening

    def _connect(self) -> Any:
        import psycopg  # the [postgres] extra: only a PostgreSQL store needs it

        url = self._engine.url.set(drivername="postgresql")
        conn = psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def _run(self, on_change: OnChange, stop: threading.Event, first_try: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                conn = self._connect()
            except Exception as exc:  # noqa: BLE001 - any driver error: wait and retry
                first_try.set()
                delay = RETRY_S[min(failures, len(RETRY_S) - 1)]
                failures += 1
                log.warning("cannot listen for other daemons' changes (%s); retrying", exc)
                stop.wait(delay)
                continue
            first_try.set()  # it listens
            try:
                if failures:
                    on_change(None, 0)  # changes made while we were away went unheard
                failures = 0
                while not stop.is_set():
                    for note in conn.notifies(timeout=WAIT_S):
                        self._deliver(note.payload, on_change)
            except Exception as exc:  # noqa: BLE001 - a lost connection: reconnect
                failures += 1
                log.warning("lost the change feed's connection (%s); reconnecting", exc)
            finally:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001
                    pass

    def _deliver(self, payload: str, on_change: OnChange) -> None:
        try:
            note = json.loads(payload)
            session_id, version, origin = note["s"], note["v"], note.get("o")
        except (ValueError, KeyError, TypeError):
            return
        if origin == self.origin or not isinstance(session_id, str) or not isinstance(version, int):
            return
        on_change(session_id, version)
