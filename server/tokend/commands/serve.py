"""`tokend serve` (the daemon), `tokend lsp` (stdio: forwarder or standalone), `tokend stop`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

STOP_TIMEOUT_SECONDS = 15.0  # for the daemon to close its socket after SIGTERM


def run_lsp(args: argparse.Namespace) -> int:
    if args.standalone:
        return _standalone(args)
    from tokend.daemon.forwarder import forward

    return forward(args.remote)


def _standalone(args: argparse.Namespace) -> int:
    from tokend.adapters.store import SqlStore
    from tokend.lsp.server import create_server
    from tokend.service.factory import build_service

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    service = build_service(Path.cwd(), args.database_url)
    if isinstance(service.store, SqlStore):
        service.store.check_integrity()  # damage is logged: on this process's stderr
    try:
        create_server(service).start_io()
    finally:
        service.close()
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from tokend.daemon.main import serve_forever

    return serve_forever(args)


def daemon_status(args: argparse.Namespace, out: TextIO) -> int:
    from tokend.daemon.main import print_daemon_status

    return print_daemon_status(args, out)


def run_stop(args: argparse.Namespace, out: TextIO) -> int:
    """`tokend stop`: SIGTERM the daemon that answers on the socket, wait until it no longer
    answers. Exit 0 when stopped or when none runs, 1 when it outlives the timeout."""
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
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while _answers(args.name):
        if time.monotonic() > deadline:
            say(out, f"the daemon (pid {pid}) still runs after {STOP_TIMEOUT_SECONDS:.0f} s", "red")
            return 1
        time.sleep(0.05)
    say(out, f"stopped the tokend daemon (pid {pid})", "green")
    return 0


def _answers(name: str | None) -> bool:
    from tokend.commands.rpc_client import NOT_LISTENING
    from tokend.daemon.paths import socket_path
    from tokend.daemon.spawn import connect_unix

    try:
        connect_unix(socket_path(name), timeout=1.0).close()
    except NOT_LISTENING:
        return False
    return True
