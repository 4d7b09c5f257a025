"""The daemon with the fixture server: what TOKEND_DAEMON_CMD points at in the tests.

    python fixture_daemon.py [--idle-timeout S] --listen unix:PATH [--listen tcp:127.0.0.1:0]

Prints "listening on ADDRESS... ready" on stderr once listening (stdout is never written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `tests.`

from tests.daemon.fixture import create_fixture_server  # noqa: E402
from tokend.core.errors import StoreError  # noqa: E402
from tokend.daemon.listener import run_daemon  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", action="append", default=[])
    parser.add_argument("--idle-timeout", type=float, default=60.0)
    parser.add_argument("--log-level", default="info")
    # Building a connection's server fails this many times first (as a damaged store made
    # tokend's fail), with a StoreError.
    parser.add_argument("--failed-builds", type=int, default=0)
    args = parser.parse_args()
    failures = [args.failed_builds]

    def connection_factory(conn: Any) -> Any:
        if failures[0] > 0:
            failures[0] -= 1
            raise StoreError("reading the session store failed: database disk image is malformed")
        return create_fixture_server(conn)

    return run_daemon(
        args.listen,
        connection_factory=connection_factory,
        ready=lambda addresses: print(
            f"listening on {' '.join(addresses)} ready", file=sys.stderr, flush=True
        ),
        idle_timeout=args.idle_timeout,
        log_level=args.log_level,
    )


if __name__ == "__main__":
    sys.exit(main())
