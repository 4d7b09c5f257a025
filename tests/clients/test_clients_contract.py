"""One contract: the TypeScript (clients/vscode/src/protocol.ts) and Lua
(clients/nvim/lua/tokend/protocol.lua) mirrors name the methods and fields protocol.md names.

protocol.md is read as a reader would: the method headings, each method's `Params {...} →
{...}` line, the Snapshot table and the notifications' shapes. A mirror that invents a method
or a field, or misses one of a shape it mirrors, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "protocol.md"
TYPESCRIPT = ROOT / "clients" / "vscode" / "src" / "protocol.ts"
LUA = ROOT / "clients" / "nvim" / "lua" / "tokend" / "protocol.lua"

# Methods the mirrors name before protocol.md documents them. Each entry must go as soon as
# protocol.md has its section (a test below fails then, to say so).
NOT_YET_DOCUMENTED: set[str] = set()

# Which mirror type holds each documented shape: (method, "params" | "result") -> type name.
SHAPES = {
    ("session/list", "params"): "SessionListParams",
    ("session/attach", "params"): "SessionIdParams",
    ("budget/snapshot", "params"): "SessionIdParams",
    ("session/compact", "params"): "SessionCompactParams",
    ("session/compact", "result"): "CompactResult",
    ("budget/didChange", "params"): "BudgetDidChangeParams",
    ("session/didCompact", "params"): "SessionDidCompactParams",
    ("session/messages", "params"): "SessionMessagesParams",
    ("session/messages", "result"): "SessionMessagesResult",
    ("session/rewind", "params"): "SessionRewindParams",
    ("session/rewind", "result"): "SessionRewindResult",
}
SNAPSHOT_PARTS = {
    "breakdown": "BreakdownItem",
    "cost": "Cost",
    "totals": "Totals",
    "lastCall": "LastCall",
    "promptCache": "PromptCache",
}


def top_level_names(shape: str) -> set[str]:
    """`{a, b?: "x"|"y", c: [{d, e}]}` -> {"a", "b", "c"}: the keys of the outer object."""
    inner = shape.strip()
    assert inner.startswith("{") and inner.endswith("}"), shape
    names, depth, current = [], 0, ""
    for char in inner[1:-1]:
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        if char == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += char
    names.append(current)
    found = {re.match(r"\s*([A-Za-z]+)", n).group(1) for n in names if n.strip()}  # type: ignore[union-attr]
    return found


def sections() -> dict[str, str]:
    """`### `method`` heading -> its text, for every method and notification."""
    text = PROTOCOL.read_text()
    parts = re.split(r"^### `([a-zA-Z$]+/[a-zA-Z]+)`.*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def documented_shape(method: str, which: str) -> set[str]:
    body = " ".join(sections()[method].split())
    if which == "params" and method in ("budget/didChange", "session/didCompact"):
        match = re.search(r"`(\{.*?\})`", body)
    else:
        match = re.search(
            r"Params `(\{.*?\})` → `(\{.*?\})`" if which == "result" else r"Params `(\{.*?\})`",
            body,
        )
    assert match, f"protocol.md's {method} section has no {which} shape"
    return top_level_names(match.group(match.lastindex or 1))


def snapshot_table() -> dict[str, str]:
    """Snapshot field -> its meaning, from protocol.md's Snapshot table."""
    table = PROTOCOL.read_text().split("### Snapshot", 1)[1].split("## Methods", 1)[0]
    fields = {}
    for row in re.findall(r"^\| (`[^|]+?) \|\s*(.*?)\s*\|$", table, flags=re.MULTILINE):
        for name in re.findall(r"`(\w+)`", row[0]):
            fields[name] = row[1]
    return fields


def typescript_types() -> dict[str, set[str]]:
    source = TYPESCRIPT.read_text()
    return {
        name: set(re.findall(r"^\s+(\w+)\??:", body, flags=re.MULTILINE))
        for name, body in re.findall(r"export interface (\w+) \{(.*?)^\}", source, re.S | re.M)
    }


def lua_types() -> dict[str, set[str]]:
    types: dict[str, set[str]] = {}
    current = None
    for line in LUA.read_text().splitlines():
        if match := re.match(r"---@class tokend\.(\w+)", line):
            current = types.setdefault(match.group(1), set())
        elif (match := re.match(r"---@field (\w+)", line)) and current is not None:
            current.add(match.group(1))
        elif not line.startswith("---@field"):
            current = None
    return types


def typescript_methods() -> set[str]:
    source = TYPESCRIPT.read_text()
    return set(re.findall(r'^\s+\w+: "([a-z$]+/[a-zA-Z]+)",$', source, flags=re.MULTILINE))


def lua_methods() -> set[str]:
    source = LUA.read_text()
    return set(re.findall(r'^---\| "([a-z$]+/[a-zA-Z]+)"$', source, flags=re.MULTILINE))


MIRRORS = {"typescript": (typescript_types, typescript_methods), "lua": (lua_types, lua_methods)}


@pytest.mark.parametrize("mirror", MIRRORS)
def test_every_method_a_mirror_names_is_documented(mirror):
    methods = MIRRORS[mirror][1]()
    documented = set(sections())
    assert {"session/create", "budget/snapshot", "budget/didChange"} <= methods
    assert methods - documented - NOT_YET_DOCUMENTED == set()


def test_the_not_yet_documented_list_only_holds_undocumented_methods():
    assert NOT_YET_DOCUMENTED & set(sections()) == set(), (
        "protocol.md documents these now: remove them from NOT_YET_DOCUMENTED"
    )


@pytest.mark.parametrize("mirror", MIRRORS)
def test_the_snapshot_has_exactly_protocol_md_fields(mirror):
    types = MIRRORS[mirror][0]()
    table = snapshot_table()
    assert types["Snapshot"] == set(table)
    for field, type_name in SNAPSHOT_PARTS.items():
        documented = top_level_names(re.search(r"`?(\{[^`]*\})", table[field]).group(1))  # type: ignore[union-attr]
        assert types[type_name] == documented, f"{mirror} {type_name} vs protocol.md's {field}"


@pytest.mark.parametrize("mirror", MIRRORS)
@pytest.mark.parametrize(("method", "which"), list(SHAPES))
def test_params_and_results_have_protocol_md_fields(mirror, method, which):
    types = MIRRORS[mirror][0]()
    assert types[SHAPES[method, which]] == documented_shape(method, which)


def documented_error_codes() -> dict[str, int]:
    """protocol.md's Errors table: name -> code, for tokend's own codes (-33099…-33000)."""
    table = PROTOCOL.read_text().split("## Errors", 1)[1].split("\nEarlier", 1)[0]
    rows = re.findall(r"^\| (-\d+) \| (\w+) \|", table, flags=re.MULTILINE)
    return {name: int(code) for code, name in rows if -33099 <= int(code) <= -33000}


def typescript_error_codes() -> dict[str, int]:
    body = re.search(r"export const ErrorCodes = \{(.*?)\} as const;", TYPESCRIPT.read_text(), re.S)
    assert body, "protocol.ts has no ErrorCodes"
    return {name: int(code) for name, code in re.findall(r"(\w+): (-\d+),", body.group(1))}


def lua_error_codes() -> dict[str, int]:
    return {
        name: int(code)
        for code, name in re.findall(r"^---\| (-\d+) # (\w+)$", LUA.read_text(), flags=re.MULTILINE)
    }


def test_tokend_error_codes_are_outside_json_rpc_and_lsp_ranges():
    codes = documented_error_codes()
    assert {"SessionNotFound", "UnknownModel", "VersionConflict"} <= set(codes)
    table = PROTOCOL.read_text().split("## Errors", 1)[1].split("\nEarlier", 1)[0]
    every = [int(code) for code in re.findall(r"^\| (-\d+) \|", table, flags=re.MULTILINE)]
    reserved = [c for c in every if -32099 <= c <= -32000 or -32899 <= c <= -32800]
    # Only the codes LSP and JSON-RPC define themselves (ServerNotInitialized, RequestCancelled).
    assert set(reserved) <= {-32002, -32800}, reserved


@pytest.mark.parametrize("mirror", [typescript_error_codes, lua_error_codes])
def test_the_clients_mirror_protocol_md_error_codes(mirror):
    assert mirror() == documented_error_codes()
