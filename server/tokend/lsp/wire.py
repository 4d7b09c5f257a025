"""Wire types: attrs classes mirroring protocol.md, camelCase on the wire, snake_case here.

`converter` structures params (raising InvalidParams with a message naming the bad field)
and unstructures results. Part unions are converted by hand in `convert.py` so that a
malformed part gets a precise message.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from typing import Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from tokend.core.errors import InvalidParams
from tokend.core.excerpt import excerpt
from tokend.lsp.strict import (
    WireValueError,
    forget_frames,
    format_error,
    join_problems,
    strict_sequences,
)
from tokend.lsp.strict import json_type as _json_type
from tokend.lsp.wire_cache import PromptCacheWire
from tokend.lsp.wire_usage import UsageParams as UsageParams  # protocol.md's Usage

T = TypeVar("T")


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
        renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}
        return make_dict_unstructure_fn(cls, conv, **renames)  # type: ignore[arg-type]

    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
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


def json_array(items: Iterable[Any]) -> JsonText:
    """A JSON array of plain values written one item at a time: a list of 78,000 file
    figures costs its text (9 MB), not three generations of dicts (100 MB)."""
    return JsonText("[" + ", ".join(json.dumps(item, allow_nan=False) for item in items) + "]")


# -- params -----------------------------------------------------------------------------------


@attrs.frozen
class SessionCreateParams:
    model: str
    title: str | None = None
    workspace_uri: str | None = None
    context_window: int | None = None


@attrs.frozen
class MessageParams:
    role: str
    parts: list[Any]
    usage: UsageParams | None = None
    model: str | None = None
    duration_ms: int | None = None  # an assistant reply: from its request to its completion
    id: str | None = None  # client-chosen: the idempotency key of the append


@attrs.frozen
class SessionAppendParams:
    session_id: str
    message: MessageParams
    if_version: int | None = None


@attrs.frozen
class SessionIdParams:
    session_id: str


@attrs.frozen
class FileParams:
    path: str
    text: str


@attrs.frozen
class ContextAssembleParams:
    session_id: str
    format: Literal["openai", "anthropic"] = "openai"
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    examples: list[dict[str, Any]] | None = None
    read_only_files: list[FileParams] | None = None
    repo_map: str | None = None
    chat_files: list[FileParams] | None = None
    reminder: str | None = None
    budget_injection: Literal["native", "synthetic", "off"] | None = None
    context_editing: bool | None = None  # Anthropic's context_management edits


@attrs.frozen
class SessionCompactParams:
    session_id: str
    strategy: Literal["auto", "prune", "summarize", "full"] = "auto"
    from_message_id: str | None = None  # the first message kept verbatim (summarize)
    instructions: str | None = None  # steer the summary (kept in it, verbatim)
    work_done_token: ProgressToken | None = None


@attrs.frozen
class SessionMessagesParams:
    session_id: str
    include_compacted: bool = False


@attrs.frozen
class SessionRewindParams:
    session_id: str
    to_message_id: str
    if_version: int | None = None
    restore: Literal["conversation", "code", "both"] = "conversation"
    dry_run: bool = False
    force: bool = False


@attrs.frozen
class SessionForkParams:
    session_id: str
    at_message_id: str | None = None
    title: str | None = None


@attrs.frozen
class ToolOutputReadParams:
    session_id: str
    ref: str
    offset: int = 0  # characters
    length: int = 50_000  # characters


@attrs.frozen
class SessionListParams:
    workspace_uri: str | None = None
    all: bool = False


# -- results ----------------------------------------------------------------------------------


@attrs.frozen
class SessionCreateResult:
    session_id: str
    version: int


@attrs.frozen
class SessionAppendResult:
    message_id: str
    version: int
    tokens: int


@attrs.frozen
class BreakdownWire:
    category: str
    tokens: int
    basis: str


@attrs.frozen
class CostWire:
    total_usd: float
    by_model: dict[str, float]


@attrs.frozen
class TotalsWire:
    calls: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


@attrs.frozen
class TimeWire:
    """Milliseconds and lines over every message of the session (Claude Code's status line)."""

    wall_ms: int
    api_ms: int | None
    lines_added: int
    lines_removed: int


@attrs.frozen
class LastCallWire:
    message_id: str
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    context_tokens: int
    cleared_input_tokens: int  # what the provider's context editing cleared from that input
    predicted_tokens: int | None
    error_pct: float | None


@attrs.frozen
class RateWire:
    tokens_per_minute: int
    tpm_limit: int
    headroom_tokens: int
    used_percentage: float


@attrs.frozen
class SnapshotWire:
    session_id: str
    model: str
    context_window: int
    max_output_tokens: int
    used_tokens: int
    used_percentage: float
    remaining_tokens: int
    estimated: bool
    breakdown: list[BreakdownWire]
    autocompact_threshold: int
    compactions: int
    compact_with: str  # "provider" | "tokend"
    cost: CostWire
    totals: TotalsWire
    time: TimeWire
    last_call: LastCallWire | None
    last_estimate_error_pct: float | None
    version: int
    warnings: list[str]
    rate: RateWire | None = None
    prompt_cache: PromptCacheWire | None = None


@attrs.frozen
class ChunkWire:
    name: str
    tokens: int


@attrs.frozen
class CompactActionWire:
    kind: str
    parts: int
    tokens_freed: int
    detail: str
    message_id: str | None = None  # the summary message (summarize, full); omitted when None


@attrs.frozen
class GatedOutputWire:
    """A tool result a gate kept out of a message (sizes in characters)."""

    part_index: int
    call_id: str
    name: str
    gate: str  # "preview" | "middleOut"
    ref: str
    original_chars: int
    shown_chars: int


@attrs.frozen
class CompactResult:
    before: int
    after: int
    actions: list[CompactActionWire]
    snapshot: SnapshotWire


@attrs.frozen
class SessionSummaryWire:
    session_id: str
    model: str
    title: str | None
    workspace_uri: str | None
    created_at: str
    updated_at: str
    used_tokens: int
    used_percentage: float
    context_window: int
    estimated: bool
