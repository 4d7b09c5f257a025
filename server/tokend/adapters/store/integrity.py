"""Is the SQLite store damaged? SQLite's own check, run when the daemon starts, bounded in time.

`PRAGMA quick_check` reads every page of the database and checks the b-trees' structure (not
that indexes match their tables: that is `integrity_check`, several times slower). It reads
the whole file, so on a big store it is stopped after `budget_s` (sqlite3_interrupt) and the
store is served unchecked, which the log says. A damaged page is also found, later,
by the first read that touches it: that request answers StoreError (`damaged_store_message`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

log = logging.getLogger(__name__)

QUICK_CHECK_BUDGET_S = 2.0
MAX_PROBLEMS = 5  # SQLite's own lines quoted in the report


@dataclass(frozen=True, slots=True)
class CheckResult:
    problems: tuple[str, ...]  # SQLite's words; empty when none were found
    complete: bool  # False: stopped at the time budget (or could not run): not checked in full
    seconds: float


def recovery_advice(path: str) -> str:
    return (
        f"To keep what can be read: `tokend stop`, `mv {path} {path}.damaged`, then "
        f"`sqlite3 {path}.damaged .recover | sqlite3 {path}` and start tokend again"
    )


def damaged_store_message(path: str | None, reason: str) -> str:
    """What a request that met a damaged page answers (StoreError)."""
    where = path or "the session store"
    return (
        f"the session store {where} is damaged ({reason}): what this request needs cannot be "
        f"read; sessions stored elsewhere in it are still served. {recovery_advice(where)}"
    )


def is_damage(exc: BaseException) -> bool:
    """True for SQLite's "database disk image is malformed" and "file is not a database"."""
    orig = getattr(exc, "orig", exc)
    name = getattr(orig, "sqlite_errorname", "")
    return isinstance(orig, sqlite3.DatabaseError) and name in ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def quick_check(engine: Engine, budget_s: float = QUICK_CHECK_BUDGET_S) -> CheckResult | None:
    """SQLite's quick_check of `engine`'s database, stopped after `budget_s`; None for another
    database (PostgreSQL checks its own pages)."""
    if engine.dialect.name != "sqlite":
        return None
    started = time.monotonic()
    raw: Any = engine.raw_connection()
    # sqlite3_interrupt from a timer: SQLite checks for it inside the b-tree walk, which is one
    # VM instruction (a progress handler, called between instructions, overshot by seconds).
    timer = threading.Timer(budget_s, raw.driver_connection.interrupt)
    timer.daemon = True
    try:
        timer.start()
        try:
            query = f"PRAGMA quick_check({MAX_PROBLEMS})"
            lines = [str(row[0]) for row in raw.driver_connection.execute(query)]
        except sqlite3.OperationalError as exc:
            if "interrupt" not in str(exc):
                raise
            return CheckResult((), False, time.monotonic() - started)
        except sqlite3.DatabaseError as exc:  # damaged beyond what quick_check reports in rows
            return CheckResult((str(exc),), True, time.monotonic() - started)
        finally:
            timer.cancel()
    finally:
        raw.invalidate()  # never back to the pool: a late interrupt must not reach a request
        raw.close()
    problems = tuple(line for line in lines if line != "ok")
    return CheckResult(problems, True, time.monotonic() - started)


def check_at_start(engine: Engine, path: str | None) -> str | None:
    """Run the bounded quick_check; log what it found. Returns the report for the clients
    (None: nothing found)."""
    try:
        result = quick_check(engine)
    except sqlite3.Error as exc:
        result = CheckResult((str(exc),), True, 0.0)
    if result is None:
        return None
    if not result.complete:
        log.info(
            "store check: SQLite's quick_check stopped after %.1f s (a big store); the store is "
            "served unchecked, and a damaged page will be reported when a request reads it",
            result.seconds,
        )
        return None
    if not result.problems:
        log.info("store check: SQLite's quick_check found no damage (%.2f s)", result.seconds)
        return None
    where = path or "the session store"
    report = (
        f"the session store {where} is damaged (SQLite's quick_check: "
        f"{'; '.join(result.problems[:MAX_PROBLEMS])}). Sessions that can be read are served; "
        f"the others answer StoreError. {recovery_advice(where)}"
    )
    log.error("%s", report)
    return report
