"""The daemon with the fixture server: what TOKEND_DAEMON_CMD points at in the tests.

    python fixture_daemon.py [--idle-timeout S] --listen unix:PATH [--listen tcp:127.0.0.1:0]

Prints "listening on ADDRESS... ready" on stderr once listening (stdout is never written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for `tests.`

from tests.daemon.fixture import create_fixture_server  # noqa: E402
from tokend.daemon.listener import run_daemon  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", action="append", default=[])
    parser.add_argument("--idle-timeout", type=float, default=60.0)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    return run_daemon(
        args.listen,
        connection_factory=create_fixture_server,
        ready=lambda addresses: print(
            f"listening on {' '.join(addresses)} ready", file=sys.stderr, flush=True
        ),
        idle_timeout=args.idle_timeout,
        log_level=args.log_level,
    )


if __name__ == "__main__":
    sys.exit(main())
