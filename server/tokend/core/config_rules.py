"""The rules a setting's type carries, and how one TOML value is checked against them. Pure.

A settings dataclass declares each field's type, and with `Annotated` what the type alone does
not say: `Annotated[int, at_least(1)]`, `Annotated[str, Check(valid_timezone, "an IANA time
zone name")]`. `structure(value, type)` is cattrs with hooks that convert nothing (TOML's
types must already be the field's: `5` is not a string, `true` is not an integer, a string is
not a list), then the `Check`s; what it raises says what was expected, in a user's words, for
the warning tokend.core.settings.config writes. The markers `UserOnly`, `FoldCase` and `NamedTables` tell
the merge what a workspace may not set, what is case-insensitive, and which table holds named
tables merged key by key.

Why `Annotated` (rather than attrs validators or field metadata): the rule sits in the field's
own type, next to its default, in a plain frozen dataclass; mypy reads the type underneath, and
nothing else about the dataclasses changes (`dataclasses.replace` keeps working).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin
from typing import get_type_hints as _type_hints

if TYPE_CHECKING:
    import cattrs


@dataclass(frozen=True, slots=True)
class Check:
    """A rule a setting's value follows beyond its type (`ok` sees the structured value), and
    what a warning says was expected (the type included: "an integer >= 1")."""

    ok: Callable[[Any], bool]
    expected: str


def at_least(low: int) -> Check:
    """An integer `low` or more (counts of tokens, characters, bytes, files)."""
    return Check(lambda v: v >= low, f"an integer >= {low}")


def in_range(low: float, high: float) -> Check:
    """A number from `low` up to (not including) `high`."""
    return Check(lambda v: low <= v < high, f"a number from {low} up to (not including) {high}")


@dataclass(frozen=True, slots=True)
class UserOnly:
    """A setting only `readers` may set; a workspace's file that sets it is told `reason`."""

    reason: str
    readers: str = "the user config"


@dataclass(frozen=True, slots=True)
class FoldCase:
    """A string setting read case-insensitively (stored lower-case)."""


@dataclass(frozen=True, slots=True)
class NamedTables:
    """A table of named tables (`[models."NAME"]`): a later layer's key replaces an earlier
    one's, name by name and key by key; their values are checked by whoever reads them."""


class Invalid(ValueError):
    """A value its type or its rule refuses."""


def _strict(kind: type, ok: Callable[[Any], bool]) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if not ok(value):
            raise Invalid(f"not a {kind.__name__}")
        return value

    return structure


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _is_dict(tp: Any) -> bool:
    return get_origin(tp) is dict


def _is_annotated(tp: Any) -> bool:
    return get_origin(tp) is Annotated


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_tuple(tp: Any) -> bool:
    return get_origin(tp) is tuple and len(get_args(tp)) == 2 and get_args(tp)[1] is Ellipsis


def _literal(value: Any, tp: Any) -> Any:
    for choice in get_args(tp):
        if type(value) is type(choice) and value == choice:
            return value
    raise Invalid("not one of the choices")


def _sequence(value: Any, tp: Any) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise Invalid("not a list")
    return tuple(_converter().structure(item, get_args(tp)[0]) for item in value)


def _table(value: Any, tp: Any) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise Invalid("not a table")
    key_type, value_type = get_args(tp)
    to = _converter().structure
    return {to(k, key_type): to(v, value_type) for k, v in value.items()}


def _union(value: Any, tp: Any) -> Any:
    for member in get_args(tp):
        if member is type(None):
            continue  # None is the default's "not set": TOML has no null to set it with
        try:
            return _converter().structure(value, member)
        except Exception:  # this member refuses it; the next may take it
            continue
    raise Invalid("none of the choices")


def _annotated(value: Any, tp: Any) -> Any:
    base, *extras = get_args(tp)
    if any(isinstance(e, FoldCase) for e in extras) and isinstance(value, str):
        value = value.lower()
    value = _converter().structure(value, base)
    for check in extras:
        if isinstance(check, Check) and not check.ok(value):
            raise Invalid(check.expected)
    return value


@cache
def _converter() -> cattrs.Converter:
    """cattrs with hooks that convert nothing: TOML's types must already be the field's. Made
    on first use: the feature modules that declare rules do not pay cattrs' import."""
    import cattrs

    converter = cattrs.Converter()
    number = (int, float)
    converter.register_structure_hook(bool, _strict(bool, lambda v: isinstance(v, bool)))
    converter.register_structure_hook(int, _strict(int, lambda v: type(v) is int))
    converter.register_structure_hook(
        float, _strict(float, lambda v: isinstance(v, number) and not isinstance(v, bool))
    )
    converter.register_structure_hook(str, _strict(str, lambda v: isinstance(v, str)))
    converter.register_structure_hook_func(_is_literal, _literal)
    converter.register_structure_hook_func(_is_tuple, _sequence)
    converter.register_structure_hook_func(_is_dict, _table)
    converter.register_structure_hook_func(_is_union, _union)
    converter.register_structure_hook_func(_is_annotated, _annotated)
    return converter


def expected(tp: Any) -> str:
    """What a value of type `tp` is, in a user's words (for a warning)."""
    args: tuple[Any, ...] = get_args(tp)
    if get_origin(tp) is Annotated:
        checks = [e.expected for e in args[1:] if isinstance(e, Check)]
        return checks[-1] if checks else expected(args[0])
    if get_origin(tp) is Literal:
        return " | ".join(str(choice) for choice in args)
    if _is_tuple(tp):
        if get_origin(args[0]) is Literal:
            return "a list of " + ", ".join(str(c) for c in get_args(args[0]))
        return "a list of " + _plural(expected(args[0]))
    if get_origin(tp) is dict:
        return "a table of " + _plural(expected(args[1]))
    if _is_union(tp):
        members = [expected(m) for m in get_args(tp) if m is not type(None)]
        return " or ".join(members)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return words.get(tp, getattr(tp, "__name__", str(tp)))


def _plural(one: str) -> str:
    return one.removeprefix("a ").removeprefix("an ") + "s"


def structure(value: Any, tp: Any) -> Any:
    """`value` (parsed TOML) as a `tp`, or Invalid naming what was expected."""
    try:
        return _converter().structure(value, tp)
    except Exception as error:  # whatever a type or a rule refuses: never a crash
        raise Invalid(expected(tp)) from error


def field_types(cls: type) -> dict[str, Any]:
    """A settings dataclass's fields and their types, rules included (Annotated)."""
    return _field_types(cls)


@cache
def _field_types(cls: Any) -> dict[str, Any]:
    hints = _type_hints(cls, include_extras=True)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def extras(tp: Any) -> tuple[Any, Any]:
    """(the type without Annotated, its metadata)."""
    if get_origin(tp) is Annotated:
        base, *extras = get_args(tp)
        return base, tuple(extras)
    return tp, ()
