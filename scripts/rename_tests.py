"""Rename the test modules after their feature, tests/<tier>/test_<feature>_<what>.py (issue 18),
and rewrite every reference to their old paths.

    .venv/bin/python scripts/rename_tests.py propose   # a feature per misnamed module, from its imports
    .venv/bin/python scripts/rename_tests.py apply     # git mv by RENAMES, then rewrite references
    .venv/bin/python scripts/rename_tests.py check     # the references to old names that remain

`propose` only prints (the table below was written from it and reviewed by hand: a module's
feature is the module it tests, read from its imports and docstring). `apply` may run again, on a
tree where some of the renames are done and where new files name the old paths: a module already
moved is skipped, and references are rewritten wherever they are (but under server/, which
`--server` includes). References rewritten: `tests/<tier>/<old>` and `tests.<tier>.<old>`
anywhere, `<old>.py` and the bare module name where the old name is unambiguous (or the file is in
the module's own tier), and `from .<old> import` beside it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.naming import known_names, misnamed  # noqa: E402

# tier -> ((old module, new module), ...); names without "test_" and ".py".
RENAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "": (("pg_anywhere", "store_pg_anywhere"),),
    "adapters": (
        ("catalog_source", "models_catalog_source"),
        ("claude_estimate", "counting_claude_estimate"),
        ("claude_fast", "counting_claude_fast"),
        ("claude_tokens", "counting_claude_tokens"),
        ("count_pieces", "counting_pieces"),
        ("model_http", "compaction_model_http"),
        ("private_folders", "store_private_folders"),
        ("tiktoken_buffer", "counting_tiktoken_buffer"),
        ("tokenizers", "counting_tokenizers"),
        ("watch", "workspace_watch"),
    ),
    "checkpoints": (
        ("blob_kill9", "checkpoints_blob_kill9"),
        ("blob_packing", "checkpoints_blob_packing"),
        ("core_checkpoints", "checkpoints_core"),
        ("first_walk_priority", "checkpoints_first_walk_priority"),
        ("index_migration", "checkpoints_index_migration"),
        ("restore_safety", "checkpoints_restore_safety"),
        ("rewind", "checkpoints_rewind"),
        ("rewind_both", "checkpoints_rewind_both"),
        ("turn_marks", "checkpoints_turn_marks"),
    ),
    "clients": (
        ("contract", "clients_contract"),
        ("nvim", "clients_nvim"),
        ("nvim_conformance", "clients_nvim_conformance"),
        ("nvim_lualine", "clients_nvim_lualine"),
        ("vscode", "clients_vscode"),
    ),
    "daemon": (
        ("append_idempotent", "session_append_idempotent"),
        ("append_order", "session_append_order"),
        ("assemble_off_loop", "assembly_off_loop"),
        ("assemble_reply_text", "assembly_reply_text"),
        ("auto_prune_cache", "compaction_auto_prune_cache"),
        ("big_frames", "daemon_big_frames"),
        ("big_frames_scanner", "daemon_big_frames_scanner"),
        ("big_replies_off_loop", "protocol_big_replies_off_loop"),
        ("buffers_of_a_closed_connection", "workspace_buffers_of_a_closed_connection"),
        ("claude_estimate_first", "counting_claude_estimate_first"),
        ("client_log", "daemon_client_log"),
        ("closed_connections_freed", "daemon_closed_connections_freed"),
        ("connections", "daemon_connections"),
        ("context_editing", "assembly_context_editing"),
        ("daemon_settings", "settings_in_the_daemon"),
        ("damaged_store", "store_damaged"),
        ("editors_share_daemon", "daemon_editors_share"),
        ("field_bounds", "protocol_field_bounds"),
        ("forwarder_exit", "daemon_forwarder_exit"),
        ("handoff_long_command", "session_handoff_long_command"),
        ("idle_exit", "daemon_idle_exit"),
        ("incremental_edits", "workspace_incremental_edits"),
        ("jsonrpc_edges", "protocol_jsonrpc_edges"),
        ("kill9_consistency", "daemon_kill9_consistency"),
        ("log_limit", "daemon_log_limit"),
        ("no_waiting_behind_a_big_append", "session_no_waiting_behind_a_big_append"),
        ("no_waiting_behind_a_big_buffer", "workspace_no_waiting_behind_a_big_buffer"),
        ("no_waiting_behind_file_tokens", "workspace_no_waiting_behind_file_tokens"),
        ("no_waiting_behind_tagging", "workspace_no_waiting_behind_tagging"),
        ("outbox", "daemon_outbox"),
        ("own_folders", "workspace_own_folders"),
        ("paths", "daemon_paths"),
        ("private_checkpoints", "checkpoints_private"),
        ("private_files", "store_private_files"),
        ("prompt_cache", "budget_prompt_cache"),
        ("restart_figures", "budget_restart_figures"),
        ("shared_postgres", "store_shared_postgres"),
        ("stop_and_release", "daemon_stop_and_release"),
        ("tag_workers_die_with_the_daemon", "workspace_tag_workers_die_with_the_daemon"),
        ("tokend_daemon", "daemon_forwarders"),
        ("untrusted_fuzz", "protocol_untrusted_fuzz"),
        ("untrusted_input", "protocol_untrusted_input"),
        ("wire_limits", "daemon_wire_limits"),
    ),
    "e2e": (
        ("agent_author", "protocol_agent_author"),
        ("api_duration", "usage_api_duration"),
        ("append_race", "compaction_append_race"),
        ("assemble_cancel", "compaction_assemble_cancel"),
        ("claude_code_times", "statusline_claude_code_times"),
        ("claude_tier", "counting_claude_tier"),
        ("claude_upgrade", "session_claude_upgrade"),
        ("client_library", "clients_library"),
        ("client_sdk", "clients_sdk"),
        ("client_summarizer", "compaction_client_summarizer"),
        ("compact_with", "compaction_compact_with"),
        ("config_command", "settings_config_command"),
        ("follow", "transcripts_follow"),
        ("follow_growth", "transcripts_follow_growth"),
        ("follow_without_inotify", "transcripts_follow_without_inotify"),
        ("fork_handoff_cli", "session_fork_handoff_cli"),
        ("import_gauge", "usage_import_gauge"),
        ("lsp_conformance", "protocol_lsp_conformance"),
        ("one_importer", "transcripts_one_importer"),
        ("provider_compaction", "compaction_provider"),
        ("pytest_lsp", "protocol_pytest_lsp"),
        ("review_findings", "session_review_findings"),
        ("sessions_cli", "session_cli"),
        ("standalone_exit", "daemon_standalone_exit"),
        ("status_cold", "statusline_status_cold"),
        ("status_local", "statusline_status_local"),
        ("status_quick", "statusline_status_quick"),
        ("status_row", "statusline_status_row"),
        ("status_start", "statusline_status_start"),
        ("stdio_server", "daemon_stdio_server"),
        ("terminal_views", "transcripts_terminal_views"),
        ("typed_refusals", "protocol_typed_refusals"),
    ),
    "install": (("build_hook", "install_build_hook"),),
    "lsp": (
        ("big_reply_beside_loop", "protocol_big_reply_beside_loop"),
        ("documents_close", "workspace_documents_close"),
        ("encode", "protocol_encode"),
        ("handler_tables", "protocol_handler_tables"),
        ("refusals_hold_nothing", "protocol_refusals_hold_nothing"),
    ),
    "service": (
        ("admin", "session_admin"),
        ("budget_injection", "assembly_budget_injection"),
        ("claude_counting", "counting_claude"),
        ("cold_assemble", "counting_cold_assemble"),
        ("cold_bodies", "session_cold_bodies"),
        ("count_upgrade", "session_count_upgrade"),
        ("events_carry_the_change", "session_events_carry_the_change"),
        ("follow_tail", "transcripts_follow_tail"),
        ("follower_listeners", "transcripts_follower_listeners"),
        ("follower_stop", "transcripts_follower_stop"),
        ("follower_watch_seam", "transcripts_follower_watch_seam"),
        ("handoff", "session_handoff"),
        ("lazy_appends", "session_lazy_appends"),
        ("lazy_load", "session_lazy_load"),
        ("listing_gauge", "session_listing_gauge"),
        ("log_edits", "session_log_edits"),
        ("provider_boundary_marks", "compaction_provider_boundary_marks"),
        ("prune_cache", "compaction_prune_cache"),
        ("rate_in_snapshot", "usage_rate_in_snapshot"),
        ("service", "session_service"),
        ("spend_limits", "usage_spend_limits"),
        ("summarizer_chain", "compaction_summarizer_chain"),
        ("summary_parts", "compaction_summary_parts"),
        ("summary_quality", "compaction_summary_quality"),
        ("time_figures", "usage_time_figures"),
        ("tool_output_settings", "session_tool_output_settings"),
        ("turns", "session_turns"),
        ("user_wide_settings", "settings_user_wide"),
    ),
    "store": (
        ("blobs", "store_blobs"),
        ("codec", "store_codec"),
        ("message_read", "store_message_read"),
        ("migration_0005", "store_migration_0005"),
        ("migrations", "store_migrations"),
        ("sql_store", "store_sql"),
        ("url", "store_url"),
        ("versions", "store_versions"),
    ),
    "unit": (
        ("accounting", "usage_accounting"),
        ("assemble", "assembly_assemble"),
        ("blas", "repomap_blas"),
        ("calibration", "counting_calibration"),
        ("catalog", "models_catalog"),
        ("claude_family", "models_claude_family"),
        ("codex_rollout", "transcripts_codex_rollout"),
        ("codex_status", "statusline_codex_status"),
        ("config", "settings_config"),
        ("config_characterization", "settings_config_characterization"),
        ("context_editing", "assembly_context_editing"),
        ("convert", "protocol_convert"),
        ("count_chunks", "counting_chunks"),
        ("count_upgrade", "session_count_upgrade"),
        ("document_text", "workspace_document_text"),
        ("estimate", "counting_estimate"),
        ("excerpt", "protocol_excerpt"),
        ("framing", "counting_framing"),
        ("gates", "session_gates"),
        ("halve", "compaction_halve"),
        ("history_record", "compaction_history_record"),
        ("layers", "layout_layers"),
        ("light_json", "statusline_light_json"),
        ("message_log", "session_message_log"),
        ("model_summary", "compaction_model_summary"),
        ("no_skips", "layout_no_skips"),
        ("pricing", "usage_pricing"),
        ("prune", "compaction_prune"),
        ("prune_policy", "compaction_prune_policy"),
        ("redacted_thinking", "transcripts_redacted_thinking"),
        ("render_beside_threads", "counting_render_beside_threads"),
        ("render_cache_json", "assembly_render_cache_json"),
        ("replay", "transcripts_replay"),
        ("shell_words", "compaction_shell_words"),
        ("size_budgets", "layout_size_budgets"),
        ("snapshot", "budget_snapshot"),
        ("status_start", "statusline_status_start"),
        ("summary", "compaction_summary"),
        ("summary_check", "compaction_summary_check"),
        ("transcript", "transcripts_claude_code"),
        ("transcript_tail", "transcripts_tail"),
        ("wire_formats", "assembly_wire_formats"),
    ),
    "workspace": (
        ("buffer_queue", "workspace_buffer_queue"),
        ("file_index", "workspace_file_index"),
        ("graph_updates", "repomap_graph_updates"),
        ("index_ports", "workspace_index_ports"),
        ("index_untracked", "workspace_index_untracked"),
        ("large_trees", "workspace_large_trees"),
        ("own_folders", "workspace_own_folders"),
        ("release", "workspace_release"),
        ("release_frees_entries", "workspace_release_frees_entries"),
        ("tag_line_text", "repomap_tag_line_text"),
        ("tag_order", "workspace_tag_order"),
        ("tag_workers", "workspace_tag_workers"),
        ("watch_delivery", "workspace_watch_delivery"),
        ("watch_limits", "workspace_watch_limits"),
    ),
}

# Files whose old test names are history, not references: this script's own table.
NOT_REWRITTEN = {"scripts/rename_tests.py"}
SKIPPED_SUFFIXES = (".lock", ".sqlite3", ".svg", ".png", ".whl", ".gz")


def say(text: str) -> None:
    sys.stdout.write(f"{text}\n")


def tier_dir(tier: str) -> str:
    return f"tests/{tier}" if tier else "tests"


def pairs() -> list[tuple[str, str, str]]:
    """(tier, old stem, new stem), stems with their `test_`."""
    return [(t, f"test_{o}", f"test_{n}") for t, table in RENAMES.items() for o, n in table]


def check_table() -> None:
    names = known_names(ROOT)
    from tests.naming import follows_rule

    for tier, _old, new in pairs():
        assert follows_rule(f"{new}.py", names), f"{tier}/{new}: not a known feature"
    for tier in RENAMES:
        olds = {o for t, o, _ in pairs() if t == tier}
        news = [n for t, _, n in pairs() if t == tier]
        assert len(set(news)) == len(news), f"{tier}: two modules renamed to one name"
        assert not olds & set(news), f"{tier}: a new name is another module's old name"


def move() -> int:
    moved = 0
    for tier, old, new in pairs():
        src, dst = ROOT / tier_dir(tier) / f"{old}.py", ROOT / tier_dir(tier) / f"{new}.py"
        if src.exists():
            if dst.exists():
                raise SystemExit(f"both {src.relative_to(ROOT)} and {dst.relative_to(ROOT)} exist")
            subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
            moved += 1
    return moved


def tracked_files(include_server: bool) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return [
        f
        for f in out.stdout.splitlines()
        if f not in NOT_REWRITTEN
        and not f.endswith(SKIPPED_SUFFIXES)
        and (include_server or not f.startswith("server/"))
        and (ROOT / f).is_file()
    ]


def rewriters(file: str) -> list[tuple[re.Pattern[str], str]]:
    """The substitutions for one file: paths and dotted names everywhere; a bare old name where it
    names one module only, or where the file sits in that module's tier."""
    here = file.rsplit("/", 1)[0] if "/" in file else ""
    stems = Counter(old for _, old, _ in pairs())
    subs: list[tuple[re.Pattern[str], str]] = []
    for tier, old, new in pairs():
        d = tier_dir(tier)
        subs.append((re.compile(rf"(?<![\w/.]){re.escape(d)}/{old}(?!\w)"), f"{d}/{new}"))
        dotted = d.replace("/", ".")
        subs.append((re.compile(rf"(?<![\w.]){re.escape(dotted)}\.{old}(?!\w)"), f"{dotted}.{new}"))
        if here == d:
            subs.append((re.compile(rf"(?<=from \.){old}(?=\s+import)"), new))
        if stems[old] == 1 or here == d:
            # a bare name: not a path's or a dotted name's last part, not a call or definition
            subs.append((re.compile(rf"(?<![\w/.]){old}(?![\w(])"), new))
    return subs


def rewrite(include_server: bool) -> dict[str, int]:
    changed: dict[str, int] = {}
    for file in tracked_files(include_server):
        path = ROOT / file
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new_text, count = text, 0
        for pattern, repl in rewriters(file):
            new_text, n = pattern.subn(repl, new_text)
            count += n
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")
            changed[file] = count
    return changed


def remaining(include_server: bool) -> list[str]:
    """Lines that still name an old module the way `apply` rewrites (none after it ran, unless a
    file is left out: server/ without --server)."""
    hits = []
    for file in tracked_files(include_server):
        try:
            lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        subs = [p for p, _ in rewriters(file)]
        current = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
        for number, line in enumerate(lines, 1):
            for pattern in subs:
                match = pattern.search(line)
                if match and match.group(0).rsplit("/", 1)[-1].rsplit(".", 1)[-1] not in current:
                    hits.append(f"{file}:{number}: {line.strip()[:120]}")
                    break
    return hits


# Where a module's path does not name its feature: tokend's top packages and its adapters and
# commands, by module name (a prefix), as the README's layout section places them.
FEATURE_OF_PACKAGE = {"daemon": "daemon", "client": "clients", "cli": "cli", "lsp": "protocol"}
FEATURE_OF_ADAPTER = {
    "blas": "repomap",
    "catalog_source": "models",
    "checkpoint": "checkpoints",
    "claude": "counting",
    "config": "settings",
    "file_index": "workspace",
    "ignore_rules": "workspace",
    "inotify": "workspace",
    "model_http": "compaction",
    "own_folders": "workspace",
    "packaged_data": "models",
    "polling": "workspace",
    "rendezvous": "statusline",
    "solo_worker": "workspace",
    "store": "store",
    "tag": "workspace",
    "telemetry": "telemetry",
    "tokenizers": "counting",
    "vocabularies": "counting",
    "watch": "workspace",
    "workspace_settings": "settings",
    "workspace": "workspace",
}
FEATURE_OF_COMMAND = {
    "checkpoints": "checkpoints",
    "compact": "compaction",
    "config": "settings",
    "file_tail": "transcripts",
    "follow": "transcripts",
    "fork": "session",
    "handoff": "session",
    "importer": "transcripts",
    "live": "statusline",
    "models": "models",
    "replay": "transcripts",
    "rpc_client": "clients",
    "serve": "daemon",
    "sessions": "session",
    "status": "statusline",
    "watch": "statusline",
}

# protocol.md's method prefixes: what a process test asks the daemon names its feature too.
FEATURE_OF_METHOD = {
    "budget": "budget",
    "context": "assembly",
    "daemon": "daemon",
    "files": "workspace",
    "follow": "transcripts",
    "repoMap": "repomap",
    "session": "session",
    "statusline": "statusline",
    "textDocument": "workspace",
    "workspace": "workspace",
}
METHOD = re.compile(r"[\"']({})/[a-zA-Z]+[\"']".format("|".join(FEATURE_OF_METHOD)))


def feature_of(module: str, names: set[str]) -> str | None:
    """The feature a `tokend` module belongs to: a package of that name on its path, else the
    tables above."""
    parts = module.split(".")
    if parts[0] != "tokend" or len(parts) < 2:
        return None
    if found := [p for p in parts[2:4] if p in names]:
        return found[0]
    tables = {"adapters": FEATURE_OF_ADAPTER, "commands": FEATURE_OF_COMMAND}
    if parts[1] in tables and len(parts) > 2:
        prefixes = sorted(tables[parts[1]], key=len, reverse=True)
        return next((tables[parts[1]][p] for p in prefixes if parts[2].startswith(p)), None)
    return FEATURE_OF_PACKAGE.get(parts[1])


def propose() -> None:
    """For each misnamed module: the features of the `tokend` modules it imports, most imported
    first (an imported name counts with its module: `from tokend.core import budget`), then those
    of the JSON-RPC methods it names, and the first words of its docstring."""
    names = set(known_names(ROOT))
    for rel in misnamed(ROOT):
        source = (ROOT / rel).read_text(encoding="utf-8")
        tree = ast.parse(source)
        votes: Counter[str] = Counter()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                if feature := feature_of(module, names):
                    votes[feature] += 1
        methods = Counter(FEATURE_OF_METHOD[m] for m in METHOD.findall(source))
        doc = " ".join((ast.get_docstring(tree) or "").split())[:60]
        imports = " ".join(f"{k}:{v}" for k, v in votes.most_common(3))
        asked = " ".join(f"{k}:{v}" for k, v in methods.most_common(2))
        say(f"{rel:56s} {imports:34s} | {asked:28s} | {doc}")


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "check"
    include_server = "--server" in argv
    check_table()
    if command == "propose":
        propose()
        return 0
    if command == "apply":
        moved = move()
        changed = rewrite(include_server)
        say(
            f"moved {moved} modules; rewrote {sum(changed.values())} references in {len(changed)} files"
        )
        for file, count in sorted(changed.items()):
            say(f"  {file}: {count}")
    left = remaining(include_server)
    say("\n".join(left) or "no reference to an old module name is left")
    bad = misnamed(ROOT)
    if bad:
        say("misnamed (add them to RENAMES):\n  " + "\n  ".join(bad))
    return 1 if left or bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
