"""`tokend status` (one-line gauge) and `tokend context` (a /context-like table)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from tokend.commands.sessions import local_service
from tokend.core.errors import SessionNotFound
from tokend.core.snapshot import BudgetSnapshot
from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.service.service import TokendService


def active_session_id(service: TokendService, workspace: Path) -> str:
    sessions = service.list_sessions(workspace.resolve().as_uri())
    if not sessions:
        raise SessionNotFound(
            f"no session for workspace {workspace.resolve()}: start one from your editor or agent, "
            "or `tokend import claude-code FILE`; pass --session ID for another workspace's"
        )
    return sessions[0].id


def _snapshot(args: argparse.Namespace) -> BudgetSnapshot:
    with local_service(args.database_url) as service:  # a read: saves no calibration
        session_id = args.session or active_session_id(service, Path.cwd())
        return service.snapshot(session_id)


def gauge_line(s: BudgetSnapshot) -> str:
    basis = "estimated" if s.estimated else "from usage"
    return (
        f"{s.model}  {s.used_tokens:,} / {s.context_window:,} tokens ({s.used_percentage:.1f}%)"
        f"  · compacts at {s.autocompact_threshold:,}  · ${s.cost_total_usd:.2f}  · {basis}"
    )


def run_status(args: argparse.Namespace, out: TextIO) -> int:
    if args.daemon:
        from tokend.commands.serve import daemon_status

        return daemon_status(args, out)
    snapshot = _snapshot(args)
    if args.json:
        out.write(json.dumps(wire.to_wire(to_wire_snapshot(snapshot))) + "\n")
    else:
        out.write(gauge_line(snapshot) + "\n")
    return 0


def context_rows(s: BudgetSnapshot) -> list[tuple[str, int, str]]:
    """(category, tokens, basis) rows that add up to the context window."""
    rows = [(b.category, b.tokens, b.basis) for b in s.breakdown]
    reserve = min(s.max_output_tokens, max(0, s.context_window - s.autocompact_threshold))
    buffer = max(0, s.context_window - s.autocompact_threshold - reserve)
    free = max(0, s.context_window - s.used_tokens - reserve - buffer)
    rows.append(("free space", free, "derived"))
    rows.append(("autocompact buffer", buffer, "config"))
    rows.append(("output reserve", reserve, "catalog"))
    return rows


def run_context(args: argparse.Namespace, out: TextIO) -> int:
    s = _snapshot(args)
    rows = context_rows(s)
    if args.json:
        out.write(json.dumps([{"category": c, "tokens": t, "basis": b} for c, t, b in rows]) + "\n")
        return 0
    out.write(gauge_line(s) + "\n\n")
    out.write(f"{'category':<20} {'tokens':>10} {'% window':>9}  basis\n")
    for category, tokens, basis in rows:
        pct = 100.0 * tokens / s.context_window if s.context_window else 0.0
        out.write(f"{category:<20} {tokens:>10,} {pct:>8.1f}%  {basis}\n")
    for warning in s.warnings:
        out.write(f"warning: {warning}\n")
    return 0
