"""`tokend serve` (the daemon), `tokend lsp` (stdio: forwarder or standalone), `tokend stop`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import BinaryIO, TextIO

STOP_TIMEOUT_SECONDS = 20.0  # for the daemon's process to end after SIGTERM (it answers what
# is in flight for up to 10 s, then ends its background work within a few seconds)


def run_lsp(args: argparse.Namespace) -> int:
    if args.standalone:
        return _standalone(args)
    from tokend.daemon.forwarder import forward

    return forward(args.remote)


def _standalone(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    return serve_standalone(Path.cwd(), args.database_url)


def serve_standalone(
    workspace: Path,
    database_url: str | None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> int:
    """The server on stdio (or on `stdin`/`stdout`: the tests' in-process standalone) until
    `exit` (or stdin's end); then its background work is ended (bounded) before the process
    exits: 0 after `shutdown` then `exit` (or a closed stdin), 1 for an `exit` without
    `shutdown` (the LSP specification's codes)."""
    from tokend.lsp.server import create_server
    from tokend.service.app import open_app

    app = open_app(workspace, database_url, serving=True)
    app.check_store()  # damage is logged: on this process's stderr
    server = create_server(app)
    app.start()  # the one client hears of the restores settled at start
    server.serve_workspaces()  # the one client uses what its requests open
    try:
        server.start_io(stdin, stdout)
    finally:
        app.close()
    exited = getattr(server.protocol, "output_closed", False)
    return 1 if exited and not getattr(server.protocol, "_shutdown", False) else 0


def run_serve(args: argparse.Namespace) -> int:
    from tokend.daemon.main import serve_forever

    return serve_forever(args)


def daemon_status(args: argparse.Namespace, out: TextIO) -> int:
    from tokend.daemon.status_client import print_daemon_status

    return print_daemon_status(args, out)


def run_stop(args: argparse.Namespace, out: TextIO) -> int:
    """`tokend stop`: SIGTERM the daemon that answers on the socket, wait until its process is
    gone (not only its socket: until then it may still be writing the store). Exit 0 when
    stopped or when none runs, 1 when it outlives the timeout."""
    from tokend.commands.output import say
    from tokend.commands.rpc_client import DaemonClient

    client = DaemonClient.connect(args.name, client_name="tokend stop")
    if client is None:
        say(out, "no daemon running")
        return 0
    with client:
        pid = int(client.request("daemon/status")["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it exited meanwhile
    from tokend.daemon.exit_watch import process_gone

    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while not process_gone(pid):
        if time.monotonic() > deadline:
            say(out, f"the daemon (pid {pid}) still runs after {STOP_TIMEOUT_SECONDS:.0f} s", "red")
            return 1
        time.sleep(0.05)
    say(out, f"stopped the tokend daemon (pid {pid})", "green")
    return 0
