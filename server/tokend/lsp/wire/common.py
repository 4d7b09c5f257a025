"""The wire's vocabulary, shared by every feature's wire module (lsp/wire/<feature>.py): attrs
classes mirroring protocol.md are camelCase on the wire, snake_case here.

`converter` structures params (raising InvalidParams with a message naming the bad field) and
unstructures results. A field made with `omitted()` is left out of the JSON while it holds its
default (protocol.md's `field?`); one made with `flattened()` (a dict) has its keys sent in its
place, as if they were the object's own. Part unions are converted by hand in `convert.py` so that a malformed part gets a
precise message.
"""

from __future__ import annotations

import functools
import itertools
import re
import typing
from collections.abc import Iterable
from typing import Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from tokend.core.errors import InvalidParams
from tokend.core.excerpt import excerpt
from tokend.core.json_text import small_dumps
from tokend.lsp.strict import WireValueError, forget_frames, format_error, join_problems
from tokend.lsp.strict import json_type as _json_type
from tokend.lsp.structure_hooks import strict_sequences

T = TypeVar("T")
_OMIT = "tokend.omit_if_default"
_FLATTEN = "tokend.flatten"
OMIT = {_OMIT: True}
"""attrs.field(metadata=OMIT): what `omitted()` makes, spelled out where mypy must see
`kw_only=True` (a field before required ones)."""
FLATTEN = {_FLATTEN: True}


def omitted(default: Any = None) -> Any:
    """An optional field (protocol.md's `name?`): left out of the JSON while it holds `default`.
    Keyword-only, so it may sit where the wire puts it, between required fields."""
    return attrs.field(default=default, kw_only=True, metadata=OMIT)


def flattened() -> Any:
    """A dict field whose keys are sent in its place, as if they were the object's own fields
    (what another layer decides: a provider's request fields in context/assemble; a wire class
    made with FLATTEN is sent the same way: daemon/status's host part). Keyword-only."""
    return attrs.field(factory=dict, kw_only=True, metadata=FLATTEN)


def camel(name: str) -> str:
    return re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)  # cache_write_1h: cacheWrite1h


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=False, forbid_extra_keys=False)

    # cattrs takes the per-field overrides as **kwargs next to its own keyword options; mypy
    # cannot tell that `**renames` (field names only) fills no option, hence the ignores.
    def structure_factory(cls: type) -> Any:
        renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}
        fields: Any = make_dict_structure_fn(cls, conv, **renames)  # type: ignore[arg-type]

        def structure_object(value: Any, type_: Any) -> Any:
            # cattrs reads optional fields with `"name" in value`: a string or an array where
            # an object is due would pass as an object with every field left out.
            if not isinstance(value, dict):
                raise WireValueError(f"must be an object, not {_json_type(value)}")
            return fields(value, type_)

        return structure_object

    def unstructure_factory(cls: type) -> Any:
        fields = attrs.fields(cls)
        renames = {
            a.name: override(rename=camel(a.name), omit_if_default=bool(a.metadata.get(_OMIT)))
            for a in fields
        }
        unstructure: Any = make_dict_unstructure_fn(cls, conv, **renames)  # type: ignore[arg-type]
        flat = [camel(a.name) for a in fields if a.metadata.get(_FLATTEN)]
        if not flat:
            return unstructure

        def flattened_object(value: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, item in unstructure(value).items():
                if key in flat:
                    out.update(item)
                else:
                    out[key] = item
            return out

        return flattened_object

    # A class's hooks written once a process: cattrs empties its dispatch cache whenever it
    # writes a new list type's hook (gen_unstructure_iterable registers it), after which it
    # asked these factories again for every class it met, and each hook was written anew.
    conv.register_structure_hook_factory(attrs.has, functools.cache(structure_factory))
    conv.register_unstructure_hook_factory(attrs.has, functools.cache(unstructure_factory))
    # JSON types are taken as sent: "5", 5.5 and true are not token counts.
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(bool, _strict_bool)
    literal: Any = Literal
    conv.register_structure_hook_func(lambda t: typing.get_origin(t) is literal, _strict_literal)
    conv.register_structure_hook(ProgressToken, _progress_token)
    strict_sequences(conv)  # a string or an object where an array is due: refused in one step
    return conv


MAX_WIRE_INT = 2**31 - 1
"""The largest integer (tokens, versions) a request may carry; see protocol.md."""


def _strict_int(value: Any, _type: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireValueError(f"must be an integer, not {_json_type(value)}")
    if not 0 <= value <= MAX_WIRE_INT:
        raise WireValueError(f"must be an integer from 0 to {MAX_WIRE_INT:,}, not {excerpt(value)}")
    return value


ProgressToken = typing.NewType("ProgressToken", object)
"""LSP's ProgressToken as tokend takes it: a string, or an integer from 0 to MAX_WIRE_INT."""


def _progress_token(value: Any, _type: Any) -> object:
    if isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_WIRE_INT
    ):
        return value
    raise WireValueError(
        f"must be a string or an integer from 0 to {MAX_WIRE_INT:,}, not {excerpt(value)}"
    )


def _strict_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise WireValueError(f"must be a string, not {_json_type(value)}")
    return value


def _strict_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise WireValueError(f"must be true or false, not {_json_type(value)}")
    return value


def _strict_literal(value: Any, literal: Any) -> Any:
    allowed = typing.get_args(literal)
    if value not in allowed or not isinstance(value, str):
        shown = ", ".join(f'"{a}"' for a in allowed)
        raise WireValueError(f"must be one of {shown}, not {excerpt(value)}")
    return value


converter = _make_converter()


def from_wire(cls: type[T], params: Any) -> T:
    """Structure request params into `cls`, or raise InvalidParams naming what is wrong."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams(f"params must be an object, got {type(params).__name__}")
    try:
        return converter.structure(params, cls)
    except cattrs.ClassValidationError as exc:
        messages = cattrs.transform_error(exc, path="params", format_exception=format_error)
        details = join_problems([_wire_path(m) for m in messages])
        forget_frames(exc)
        raise InvalidParams(f"invalid params: {details}") from None


def _wire_path(message: str) -> str:
    """ "params.message.usage.input_tokens must be ..." in camelCase, less "params."."""
    text, at, path = message.rpartition(" @ ")
    if not at:
        return message
    path = re.sub(r"(?<=\.)[a-z0-9_]+", lambda m: camel(m.group(0)), path)
    return f"{path.removeprefix('params.')} {text}"


def to_wire(value: Any) -> Any:
    return converter.unstructure(value)


class JsonText(str):
    """A result already written as JSON text, sent as it is (the connection's protocol puts
    it in the reply without building or converting its objects again)."""


class JsonBytes:
    """A result already written as JSON (ASCII, as json.dumps writes it), as pieces of bytes
    sent one after the other: the reply's frame is one join of them. A big reply written as
    JsonText was copied four times on its way out (joined, made a JsonText, encoded, framed:
    2.6 MB each at 10,000 messages, each a fresh mapping of pages)."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.pieces = tuple(pieces)


def _as_written(value: JsonText | JsonBytes) -> JsonText | JsonBytes:
    return value


# A result written already goes out as it is, found by its class: cattrs asked of a class it
# had no hook for whether it is a typing.Protocol, a check of every Protocol the daemon has
# loaded (2.6 ms on the event loop at the daemon's first `context/assemble` reply).
converter.register_unstructure_hook(JsonBytes, _as_written)
converter.register_unstructure_hook(JsonText, _as_written)

ARRAY_CHUNK = 1000


def json_array(items: Iterable[Any]) -> JsonText:
    """A JSON array of plain values written ARRAY_CHUNK items at a time: a list of 78,000 file
    figures costs its text (9 MB), not three generations of dicts (100 MB); one encoder call
    per chunk, not one per item (100,000 figures: 1,000 items a call took a fifth of the
    time of one each). The same text as json.dumps of the whole list."""
    chunks, each = [], iter(items)
    while chunk := list(itertools.islice(each, ARRAY_CHUNK)):
        chunks.append(small_dumps(chunk)[1:-1])
    return JsonText("[" + ", ".join(chunks) + "]")


@attrs.frozen
class SessionIdParams:
    """The params of every method that names only a session."""

    session_id: str


@attrs.frozen
class NoParams:
    """The params of a method that takes none (daemon/status, follow/list): whatever is sent is
    ignored, as before these methods were typed."""
