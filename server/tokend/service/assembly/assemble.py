"""context/assemble: the next request, built from the session and validated against the limit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tokend.core.assembly.assemble import Assembly, AssemblyRequest, assemble
from tokend.core.assembly.budget_injection import (
    INJECTION_MODES,
    BudgetFigures,
    inject,
    native_text,
    resolve_mode,
    synthetic_text,
    task_budget_model,
    with_task_budget,
)
from tokend.core.assembly.budget_injection import ends_with_tool_results as _ends_with_tool_results
from tokend.core.assembly.context_editing import provider_edits, with_request_field
from tokend.core.assembly.context_inputs import CountedText, ExampleTurn, FileText, file_block_text
from tokend.core.assembly.tool_shapes import tools_for
from tokend.core.counting.framing import (
    claude_frame_delta,
    message_overhead,
    reply_priming,
    tool_schemas_tokens,
)
from tokend.core.errors import InvalidParams
from tokend.core.models.catalog import ModelInfo
from tokend.core.session.changes import RecordMeasured
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.assembly.ports import AssemblyService
from tokend.service.assembly.workspace_window import with_workspace
from tokend.service.counting.counter import ModelCounter
from tokend.service.session.state import SessionState
from tokend.service.usage.monitor import UsageMonitor
from tokend.service.workspace.registry import Workspaces

# AssembleInput lives in assemble_input.py
__all__ = ["AssembleInput", "assemble_context_async"]


async def assemble_context_async(
    service: AssemblyService,
    session_id: str,
    inp: AssembleInput,
    *,
    usage: UsageMonitor | None = None,
    workspaces: Workspaces | None = None,
) -> Assembly:
    """The next request of the session (a read: the session's version does not move), with
    the work off the event loop: the workspace's files, the repo map, the counting and the
    assembly run in the service's worker threads (on the session's data as it was when the
    request began), the measured figures are written there too (SessionState.apply_async);
    only the checks and the budget's short text stay on the loop. A cancel while the worker
    builds answers RequestCancelled and records nothing.

    `usage` (the app's) refuses a session over its spend limit and warns near it; without it
    nothing is checked. What the client leaves out comes from the session's workspace when
    `workspaces` has it open: memory files and read-only files (readOnlyFiles), chat files
    (chatFiles), and the repo map once the workspace's index is ready (see
    service/assembly/workspace_window.py)."""
    inp = replace(inp, tools=tools_for(inp.format, inp.tools))  # the format's shape, or refused
    state, spend_warnings = _admit(service, session_id, inp, usage)
    built = await service.workers.run(
        lambda: _build(service, workspaces, state, inp, spend_warnings)
    )
    data = state.data
    if dict(data.measured) != built.measured or data.measured_exact != built.exact:
        change = RecordMeasured(built.measured, built.exact)
        await state.apply_async(change, None, service.workers.submit)  # a read: nobody is told
    budgeted = _with_budget(service, session_id, inp, built.assembly, built.limit, built.overhead)
    return _with_edits(service, session_id, inp, budgeted)


@dataclass(frozen=True)
class _Built:
    assembly: Assembly
    measured: dict[str, int]  # the non-zero measured figures (RecordMeasured)
    exact: bool
    limit: int
    overhead: int


def _admit(
    service: AssemblyService, session_id: str, inp: AssembleInput, usage: UsageMonitor | None
) -> tuple[SessionState, tuple[str, ...]]:
    """The session's owner and the spend warnings, once the request is known to be acceptable
    (cheap checks, on the caller's thread)."""
    state = service.sessions.state(session_id)
    if inp.budget_injection is not None and inp.budget_injection not in INJECTION_MODES:
        raise InvalidParams(
            f"budgetInjection must be one of {', '.join(INJECTION_MODES)}, "
            f"not {inp.budget_injection!r}"
        )
    if usage is None:
        return state, ()
    return state, tuple(usage.check_assemble(session_id))  # may refuse


def _request_extra(wire_format: str, model: ModelInfo) -> int:
    """What a request adds beyond its messages: OpenAI's reply priming, a Claude family's frame
    beyond the measured per-message framing (core.counting.framing.claude_frame_delta)."""
    if wire_format == "openai":
        return reply_priming(model.provider, model.tokenizer)
    return claude_frame_delta(model.tokenizer)


def _build(
    service: AssemblyService,
    workspaces: Workspaces | None,
    state: SessionState,
    inp: AssembleInput,
    spend_warnings: tuple[str, ...],
) -> _Built:
    """The assembly of the session's data as it is now (file reads, repo map, counting)."""
    data = state.data
    inp, workspace_warnings = with_workspace(workspaces, data, inp)
    counter = service.models.counter(data.model)
    provider = data.model.provider
    count, kept = counter.count_text, _kept(counter)  # kept: what every request repeats

    def counted(text: str | None) -> CountedText | None:
        return CountedText(text, kept(text)) if text else None

    def files(items: Sequence[tuple[str, str]]) -> list[FileText]:
        return [FileText(p, t, kept(file_block_text(p, t))) for p, t in items]

    examples = [_example(i, e, kept) for i, e in enumerate(inp.examples)]
    read_only, chat = files(inp.read_only_files), files(inp.chat_files)
    repo_map = counted(inp.repo_map)
    overhead = message_overhead("user", provider)  # the same for every role
    # OpenAI sends the system prompt as a message (framed); Anthropic as a separate field.
    system_framing = overhead if inp.format == "openai" else 0
    system_tokens = kept(inp.system) + system_framing if inp.system else 0
    tools_tokens = tool_schemas_tokens(list(inp.tools), kept, provider) if inp.tools else 0
    request = AssemblyRequest(
        format=inp.format,  # type: ignore[arg-type]  # assemble() refuses unknown formats
        limit_tokens=service.models.input_limit(data),
        history=data.messages,
        system=inp.system,
        system_tokens=system_tokens or None,
        tools=tuple(inp.tools),
        tools_tokens=tools_tokens,
        examples=examples,
        read_only_files=read_only,
        repo_map=repo_map,
        chat_files=chat,
        reminder=counted(inp.reminder),
        message_overhead=lambda _message: overhead,
        reply_priming_tokens=_request_extra(inp.format, data.model),
        count=count,
        pruned_result_tokens=counter.pruned_tokens(),
        render_cache=state.render_cache,
        # The session's totals are counted for its model's format; another format recounts.
        message_tokens=data.message_tokens if inp.format == counter.format else None,
        history_tokens=data.log.total_tokens,
    )
    assembly = assemble(request)
    if workspace_warnings or spend_warnings:
        warnings = (*assembly.warnings, *workspace_warnings, *spend_warnings)
        assembly = replace(assembly, warnings=warnings)
    measured = _measured(request, system_tokens, tools_tokens)
    return _Built(assembly, measured, counter.exact, request.limit_tokens, overhead)


def _measured(request: AssemblyRequest, system_tokens: int, tools_tokens: int) -> dict[str, int]:
    """The non-zero figures of what every request repeats (RecordMeasured): the system prompt
    with the examples, the tools, the memory files, the repo map and the chat files."""
    repo_map = request.repo_map
    measured = {
        "system": system_tokens + sum(e.tokens or 0 for e in request.examples),
        "tools": tools_tokens,
        "memory": sum(f.tokens or 0 for f in request.read_only_files),
        "repoMap": repo_map.tokens or 0 if repo_map else 0,
        "chatFiles": sum(f.tokens or 0 for f in request.chat_files),
    }
    return {k: v for k, v in measured.items() if v}


def _with_budget(
    service: AssemblyService,
    session_id: str,
    inp: AssembleInput,
    assembly: Assembly,
    limit_tokens: int,
    overhead: int,
) -> Assembly:
    """The assembly with the model's budget told to it (core.assembly.budget_injection), after the
    cached prefix, in a "budget" chunk of its own (0 when off)."""
    state = service.sessions.state(session_id)
    data = state.data
    config = service.models.config_for(data.info.workspace_uri)
    task_budget = task_budget_model(data.model.name, inp.format)
    native = data.model.native_budget_injection or task_budget
    mode = resolve_mode(inp.budget_injection, config.context.budget_injection, native)
    if mode == "off":
        return assembly  # no "budget" chunk: the request is exactly what it was without it
    snapshot = state.snapshot
    figures = BudgetFigures(
        snapshot.used_tokens,
        snapshot.context_window,
        snapshot.autocompact_threshold,
        config.compaction.auto,
    )
    if mode == "native" and task_budget:
        return with_task_budget(assembly, figures)
    text = (
        native_text(figures, _ends_with_tool_results(assembly))
        if mode == "native"
        else synthetic_text(figures)
    )
    return inject(
        assembly, text, service.models.counter(data.model).count_text, overhead, limit_tokens
    )


def _with_edits(
    service: AssemblyService, session_id: str, inp: AssembleInput, assembly: Assembly
) -> Assembly:
    """The assembly with Anthropic's context editing edits (core.assembly.context_editing) when the
    request or the session's settings ask for them, or the warning that says why not."""
    data = service.sessions.state(session_id).data
    cfg = service.models.config_for(data.info.workspace_uri).context_editing
    edits = provider_edits(cfg, inp.context_editing, data.model.name, inp.format)
    if edits.warning is not None:
        assembly = replace(assembly, warnings=(*assembly.warnings, edits.warning))
    if edits.context_management is None or edits.beta is None:
        return assembly
    return with_request_field(assembly, "contextManagement", edits.context_management, edits.beta)


def _kept(counter: ModelCounter) -> Callable[[str], int]:
    """Counts whose figures the store keeps whatever the text's length (ModelCounter.count_kept):
    found there on the first assembly after a restart, with no vocabulary loaded."""
    return lambda text: counter.count_kept([text])[0]


def _example(index: int, raw: Mapping[str, Any], count: Any) -> ExampleTurn:
    role, text = raw.get("role"), raw.get("text")
    if role not in ("user", "assistant") or not isinstance(text, str):
        raise InvalidParams(f"examples[{index}] must be {{role: 'user'|'assistant', text: string}}")
    return ExampleTurn(role, text, count(text))
