"""What params may hold before any handler sees them, checked in one place for every method.

- the converters' structure hooks (structure_hooks.py) refuse values of the wrong JSON type
  with WireValueError, worded by `json_type`.
- `untrusted_problem(params)`: one walk over the parsed params for what JSON or the store
  cannot carry: nesting deeper than MAX_PARAMS_DEPTH, NaN/Infinity (Python's json reads them,
  RFC 8259 has no such numbers, and node cannot parse them back), and lone UTF-16 surrogates
  (`"\\ud800"`: not Unicode, so neither SQLite nor a file can take them).
- `FIELD_CHARS`: fields that have no business being long (ids, model and tool names, titles,
  paths, URIs, a handoff's goal) are bounded, wherever they appear in params outside free-form
  JSON (a tool call's `input`, LSP's `capabilities`...): a 8 MB title was copied, stored, logged
  and encoded on the event loop, and kept in memory for as long as its session.
- `join_problems`: an error message names at most MAX_PROBLEMS problems, each bounded.
- `forget_frames(exc)`: a refusal's exception, once answered, keeps no frame alive. Its
  traceback's frames hold the params (an 8 MB string), and they sit in reference cycles (cattrs
  collects sub-exceptions in a list of the failing frame; pygls keeps the error in a future its
  frame holds) that only the collector's rare full passes free: after the fuzz, 202 refusals
  held 553 MiB of strings that way.
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Callable
from typing import Any

import attrs

from tokend.core.excerpt import bounded, excerpt

MAX_PARAMS_DEPTH = 64
"""Levels of arrays and objects params may nest (params itself is level 1). Deeper input is
refused at the edge: handlers, assembly and the store recurse over it."""
MAX_PROBLEMS = 3
"""Problems named in one error message; the rest are counted."""
PROBLEM_CHARS = 300

ID_CHARS = 256
NAME_CHARS = 256
TITLE_CHARS = 1_024
PATH_CHARS = 4_096  # PATH_MAX on Linux, in bytes: no longer path can be opened
URI_CHARS = 16_384  # a PATH_MAX path whose every byte is percent-encoded, and the scheme
PROSE_CHARS = 16_384  # a handoff's goal, a summary's instructions: a few pages
FIELD_CHARS: dict[str, int] = {
    **dict.fromkeys(
        ("sessionId", "messageId", "toMessageId", "atMessageId", "fromMessageId", "callId",
         "followerId", "checkpointId", "id", "ref", "workDoneToken", "partialResultToken"),
        ID_CHARS,
    ),
    **dict.fromkeys(("model", "name", "agent", "languageId", "identifiers"), NAME_CHARS),
    "title": TITLE_CHARS,
    **dict.fromkeys(("path", "paths", "files", "rootPath"), PATH_CHARS),
    **dict.fromkeys(("uri", "workspaceUri", "rootUri"), URI_CHARS),
    **dict.fromkeys(("goal", "instructions"), PROSE_CHARS),
}  # fmt: skip
"""Most characters a string under each of these keys may hold (for an array of strings, each
item), wherever the key appears in params outside FREE_FORM. protocol.md lists them."""
FREE_FORM = frozenset(("input", "initializationOptions", "capabilities", "tools", "examples"))
"""Keys whose values are any JSON of the client's (a tool's input, a provider's tool
definitions, LSP's capabilities): their keys mean nothing to tokend and are not bounded."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,63}")


class WireValueError(ValueError):
    """A value of the wrong JSON type or range; its text is shown to the user as is."""


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def format_error(exc: BaseException, type_: Any) -> str:
    """cattrs.transform_error's `format_exception`: what is wrong, never the value."""
    if isinstance(exc, WireValueError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "is required"
    if isinstance(exc, TypeError | ValueError | AttributeError) and type_ is not None:
        name = getattr(type_, "__name__", None)
        return f"must be {'an object' if attrs.has(type_) else name or 'valid'}"
    return "is invalid"


def join_problems(problems: list[str]) -> str:
    """At most MAX_PROBLEMS problems, each bounded, and how many more there were."""
    shown = "; ".join(bounded(p, PROBLEM_CHARS) for p in problems[:MAX_PROBLEMS])
    more = len(problems) - MAX_PROBLEMS
    return f"{shown}; and {more:,} more" if more > 0 else shown


def untrusted_problem(params: Any, max_depth: int = MAX_PARAMS_DEPTH) -> str | None:
    """What params hold that tokend must refuse (see the module docstring), or None. One
    iterative walk: a value too deep for recursion is measured without recursing."""
    if not isinstance(params, dict | list):
        return _leaf_problem(params, ("params",))
    stack: list[tuple[Any, int, tuple[Any, ...], int | None]] = [(params, 1, ("params",), None)]
    while stack:
        item, depth, path, items_bound = stack.pop()
        if depth > max_depth:
            return f"invalid params: nested more than {max_depth} levels deep"
        free = items_bound == 0  # inside free-form JSON: nothing bounded
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(key, str) and not key.isascii() and _LONE_SURROGATE.search(key):
                return _leaf_problem(key, path)
            bound = _bound(item, key, items_bound, free)
            if isinstance(child, dict | list):
                below = (
                    0 if free or key in FREE_FORM else bound if isinstance(child, list) else None
                )
                stack.append((child, depth + 1, (path, key), below))
            elif isinstance(child, str | float) and (problem := _leaf_problem(child, (path, key))):
                return problem
            elif bound is not None and isinstance(child, str) and len(child) > bound:
                return too_long((path, key), len(child), bound)
    return None


def bounds_problem(params: Any, length: Callable[[str], int]) -> str | None:
    """The first string of `params` under a bounded key (FIELD_CHARS) whose `length` is over its
    bound, or None: for a big body whose long strings are still placeholders (bigframes.py),
    before they are read back."""
    stack: list[tuple[Any, tuple[Any, ...], int | None]] = [(params, ("params",), None)]
    while stack:
        item, path, items_bound = stack.pop()
        if not isinstance(item, dict | list):
            continue
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            bound = _bound(item, key, items_bound, False)
            if isinstance(child, dict | list) and key not in FREE_FORM:
                stack.append((child, (path, key), bound if isinstance(child, list) else None))
            elif bound is not None and isinstance(child, str) and (n := length(child)) > bound:
                return too_long((path, key), n, bound)
    return None


def _bound(parent: Any, key: Any, items_bound: int | None, free: bool) -> int | None:
    if free:
        return None
    if isinstance(parent, list):
        return items_bound
    return FIELD_CHARS.get(key) if isinstance(key, str) else None


def too_long(path: tuple[Any, ...], chars: int, bound: int) -> str:
    return (
        f"invalid params: {_path_text(path)} is {chars:,} characters long; it holds at most "
        f"{bound:,}"
    )


def _leaf_problem(value: Any, path: tuple[Any, ...]) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return (
            f"invalid params: {_path_text(path)} is {shown}: JSON numbers are finite "
            "(RFC 8259); send null or a string instead"
        )
    if isinstance(value, str) and not value.isascii() and (found := _LONE_SURROGATE.search(value)):
        return (
            f"invalid params: {_path_text(path)} holds a lone UTF-16 surrogate "
            f"(\\u{ord(found.group()):04x} at character {found.start():,}): strings must be "
            "valid Unicode; escape a pair (\\ud83d\\ude00) or send the character itself"
        )
    return None


def _path_text(path: tuple[Any, ...]) -> str:
    """("params", "a"), 0) as `a[0]` (keys cut to excerpts)."""
    keys: list[Any] = []
    while len(path) == 2:
        path, key = path
        keys.append(key)
    text = ""
    for key in reversed(keys):
        if isinstance(key, int):
            text += f"[{key}]"
        elif _NAME.fullmatch(key):
            text += f".{key}" if text else key
        else:
            text += f"[{excerpt(key, 40)}]"
    return text or "params"


def forget_frames(exc: BaseException | None) -> None:
    """Clear the locals of every finished frame in `exc`'s traceback, its sub-exceptions'
    (cattrs' groups), causes and contexts, and drop the tracebacks (see the module docstring)."""
    todo, seen = [exc], set()
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if item.__traceback__ is not None:
            traceback.clear_frames(item.__traceback__)
            item.__traceback__ = None
        todo += [item.__cause__, item.__context__, *getattr(item, "exceptions", ())]
