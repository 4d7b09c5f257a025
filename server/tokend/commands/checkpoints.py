"""`tokend checkpoints SESSION [--diff MESSAGE [--path PATH]]` and `tokend rewind SESSION
MESSAGE [--dry-run] [--force]`: what each turn changed, and the code part of a rewind.

Both ask the running daemon (it holds the watcher, so what it knows is newest); with no daemon
they read and write the checkpoint store directly.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.commands.local import local_app
from tokend.commands.output import Cell, Column, plural, say, write_json, write_table
from tokend.commands.rpc_client import DaemonClient
from tokend.lsp.results import to_wire_interrupted, to_wire_restored, to_wire_turn
from tokend.lsp.wire import to_wire
from tokend.service.checkpoints import restore_journal
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.checkpoints.restore import SYMLINK_NOTE
from tokend.service.checkpoints.views import list_turns, restore, turn_diff


def _ask(
    database_url: str | None, method: str, params: dict[str, Any], locally: Callable[..., Any]
) -> Any:
    """`method` on the running daemon, else `locally(checkpoints)` on the store."""
    client = DaemonClient.connect()
    if client is not None:
        with client:
            return client.request(method, params)
    with local_app(database_url, CheckpointStore()) as app:
        app.service.sessions.state(params["sessionId"])  # SessionNotFound for an unknown id
        return locally(app.checkpoints)


def run_checkpoints(args: argparse.Namespace, out: TextIO) -> int:
    sid = args.session_id
    if args.diff:
        params = {"sessionId": sid, "messageId": args.diff, "path": args.path}
        result = _ask(
            args.database_url,
            "checkpoint/diff",
            params,
            lambda c: {"diff": turn_diff(c, sid, args.diff, args.path)},
        )
        out.write(result["diff"])
        return 0
    result = _ask(
        args.database_url,
        "checkpoint/list",
        {"sessionId": sid},
        lambda c: {
            "turns": [to_wire(to_wire_turn(t)) for t in list_turns(c, sid)],
            "interrupted": [
                to_wire(to_wire_interrupted(i)) for i in restore_journal.interrupted(c, sid)
            ],
        },
    )
    if args.json:
        write_json(out, result)
        return 0
    rows: list[list[Cell]] = []
    for turn in result["turns"]:
        for f in [*turn["files"], *turn["outside"]]:
            lines = "" if f["added"] is None else f"+{f['added']} -{f['removed']}"
            moved = f" (from {f['movedFrom']})" if f.get("movedFrom") else ""
            who = "agent" if f["origin"] == "agent" else f"{f['origin']} (not the agent)"
            rows.append([turn["messageId"], f["path"] + moved, f["kind"], lines, who])
        for warning in turn["warnings"]:
            rows.append([turn["messageId"], warning, "not saved", "", ""])
    if rows:
        columns = [Column("turn"), Column("file"), Column("change"), Column("lines"), Column("by")]
        write_table(out, columns, rows)
    for item in result.get("interrupted", []):
        what = "rewind" if item["restore"] == "both" else "restore"
        say(
            out,
            f"interrupted {what} to {item['toMessageId']} (started {item['startedAt']}): "
            f"settled at start, {item['finished']} files finished, {len(item['kept'])} kept",
            "yellow",
        )
    say(out, f"{plural(len(result['turns']), 'turn')} checkpointed in session {sid}")
    return 0


def run_rewind(args: argparse.Namespace, out: TextIO) -> int:
    sid, to = args.session_id, args.message_id
    params = {"sessionId": sid, "toMessageId": to, "dryRun": args.dry_run, "force": args.force}

    def locally(checkpoints: Checkpoints) -> Any:
        done = checkpoints.submit(lambda: restore(checkpoints, sid, to, args.dry_run, args.force))
        return to_wire(to_wire_restored(done.result()))

    result = _ask(args.database_url, "checkpoint/restore", params, locally)
    if args.json:
        write_json(out, result)
        return 0
    verb = "would" if args.dry_run else "did"
    for f in result["files"]:
        back = f" (moved back from {f['movedBackFrom']})" if f.get("movedBackFrom") else ""
        reason = f": {f['reason']}" if f.get("reason") else ""
        style = "yellow" if f["action"] in ("kept", "unavailable") else None
        say(out, f"{f['action']:<11} {f['path']}{back}{reason}", style)
    for path in result["outside"]:
        say(out, f"{'outside':<11} {path}: changed outside the agent's turns, not touched", "dim")
    kept = result["kept"]
    kept_files = [f for f in result["files"] if f["action"] == "kept"]
    linked = sum(1 for f in kept_files if SYMLINK_NOTE in (f.get("reason") or ""))
    hint = "; --force overwrites the kept files" if len(kept_files) > linked else ""
    hint = "" if args.force else hint
    if linked:  # --force never helps there: tokend never writes through a symlink
        hint += f"; {plural(linked, 'path')} through a symlink not written (--force never writes through one)"
    say(out, f"{verb} restore {plural(result['restored'], 'file')}, kept {kept}{hint}")
    return 1 if kept else 0
