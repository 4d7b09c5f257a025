"""`tokend serve` (the daemon) and `tokend lsp` (stdio: forwarder or standalone server)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TextIO


def run_lsp(args: argparse.Namespace) -> int:
    if args.standalone:
        return _standalone(args)
    from tokend.daemon.forwarder import forward

    return forward(args.remote)


def _standalone(args: argparse.Namespace) -> int:
    from tokend.lsp.server import create_server
    from tokend.service.factory import build_service

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    service = build_service(Path.cwd(), args.database_url)
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
