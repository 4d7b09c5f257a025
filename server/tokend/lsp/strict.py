"""What params may hold before any handler sees them, checked in one place for every method.

- `strict_sequences(converter)`: where an array is due (`list[X]`, `Sequence[X]`), cattrs takes
  any iterable: a 100,000-character string was structured one character at a time, each a
  failed item with its own error (16-42 s, a 16.5 MB reply), and an object's keys were taken
  as items. Registered on both converters (tokend's wire types and lsprotocol's), the hook
  refuses anything but a JSON array in one step, and stops at an array's first bad item.
- `strict_lsp_values(converter)`: lsprotocol's types take values as sent, and objects only
  where objects are due, as tokend's own wire types do (lsp/wire/).
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
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import cattrs
from cattrs.cols import is_sequence
from cattrs.errors import IterableValidationError, IterableValidationNote

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


def strict_sequences(converter: cattrs.Converter) -> None:
    """Make `converter` refuse anything but a JSON array where a sequence is due, in one step."""

    def is_list_like(type_: Any) -> bool:
        return is_sequence(type_) and getattr(type_, "__origin__", None) is not tuple

    converter.register_structure_hook_factory(is_list_like, lambda t: _array_hook(t, converter))


def strict_lsp_values(converter: cattrs.Converter) -> None:
    """lsprotocol's converter as strict as tokend's wire types: an object where an object is
    due (its generated code reads optional fields with `"name" in value`, so a string passed as
    an object with every field left out), and strings, integers and booleans taken as sent
    (cattrs would turn 5 into "5", "5" and true into 5). LSP's integers are 32-bit signed."""
    pairs = converter._structure_func._function_dispatch._handler_pairs  # pinned cattrs 26
    attrs_factory: tuple[Any, bool] = next(
        (handler, takes_converter)
        for predicate, handler, is_generator, takes_converter in pairs
        if predicate is attrs.has and is_generator
    )

    def object_factory(cls: type) -> Any:
        handler, takes_converter = attrs_factory
        fields = handler(cls, converter) if takes_converter else handler(cls)

        def structure_object(value: Any, type_: Any) -> Any:
            if not isinstance(value, dict):
                raise WireValueError(f"must be an object, not {json_type(value)}")
            return fields(value, type_)

        return structure_object

    converter.register_structure_hook_factory(attrs.has, object_factory)
    converter.register_structure_hook(str, _lsp_str)
    converter.register_structure_hook(int, _lsp_int)
    converter.register_structure_hook(bool, _lsp_bool)


def _lsp_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise WireValueError(f"must be a string, not {json_type(value)}")
    return value


def _lsp_int(value: Any, _type: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireValueError(f"must be an integer, not {json_type(value)}")
    if not -(2**31) <= value < 2**31:
        raise WireValueError(f"must be a 32-bit integer, not {excerpt(value)}")
    return value


def _lsp_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise WireValueError(f"must be true or false, not {json_type(value)}")
    return value


def _array_hook(type_: Any, converter: cattrs.Converter) -> Any:
    args = getattr(type_, "__args__", None)
    elem_type = args[0] if args else Any
    handler = None if elem_type is Any else converter.get_structure_hook(elem_type)

    def structure_array(value: Any, _type: Any) -> list[Any]:
        if not isinstance(value, list):
            raise WireValueError(f"must be an array, not {json_type(value)}")
        if handler is None:
            return list(value)
        return _items(value, handler, elem_type, type_)

    return structure_array


def _items(value: Iterable[Any], handler: Any, elem_type: Any, type_: Any) -> list[Any]:
    """Each item structured; the first bad one is the error (an array of 100,000 bad items
    costs one exception, not 100,000)."""
    items = []
    for index, item in enumerate(value):
        try:
            items.append(handler(item, elem_type))
        except Exception as exc:
            note = IterableValidationNote(f"Structuring @ index {index}", index, elem_type)
            exc.__notes__ = [*getattr(exc, "__notes__", []), note]
            raise IterableValidationError("an array item does not fit", [exc], type_) from None
    return items


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
