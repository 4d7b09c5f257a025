"""Frozen slotted dataclasses built from a read's rows without their generated `__init__`
(issue 22: a restarted daemon's first `context/assemble` at 10,000 messages builds a Message
and a StoredPart for each; a frozen dataclass's `__init__` sets each field through
`object.__setattr__`, 1.2 us a Message and 0.5 a StoredPart, about half that here, each field
set by its slot's own descriptor).

The values are the ones the class's constructor makes from every field given in order. A class
with a `__post_init__`, a field made by a factory or left out of `__init__` is built by its
constructor."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def positional(cls: type[T]) -> Callable[..., T]:
    """`cls(*values)` for every field given, in order."""
    fields = _plain_fields(cls)
    if fields is None:
        return cls
    names = [f"v{i}" for i in range(len(fields))]
    body = "".join(f"    s{i}(o, v{i})\n" for i in range(len(fields)))
    source = f"def build({', '.join(names)}):\n    o = new(cls)\n{body}    return o\n"
    built: Callable[..., T] = _compiled(cls, fields, source)
    return built


def _plain_fields(cls: type) -> list[dataclasses.Field[Any]] | None:
    """The fields of a slotted dataclass that sets nothing beyond them, else None."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        return None
    if hasattr(cls, "__post_init__"):
        return None
    fields = list(dataclasses.fields(cls))
    if any(f.default_factory is not dataclasses.MISSING or not f.init for f in fields):
        return None
    return fields


def _compiled(cls: type, fields: list[dataclasses.Field[Any]], source: str) -> Any:
    setters = {f"s{i}": getattr(cls, f.name).__set__ for i, f in enumerate(fields)}
    namespace = {"cls": cls, "new": object.__new__, **setters}
    exec(source, namespace)  # noqa: S102  # our own source, written above from the fields
    return namespace["build"]
