"""Tool-output gates: decided once, on append, and kept with the part.

Claude Code's gates: a single tool result over 50,000 characters is kept whole in the store and
the model sees its first 2,000 characters plus a reference; when the results of one message
together pass 200,000 characters, the largest are gated first until the rest fit. A tool listed
in `middle_out_tools` is cut in the middle instead (Codex: the start and the end stay). Tools
that read files are exempt (`exempt_tools`): gating a file read would make the agent read it
again. The decision is written into the part (`gate`, `ref`, `original_chars`, and the text
the model sees as `output`), so later assemblies are byte-identical and the provider's prompt
cache stays warm. All sizes are characters (Python str length).

An output may arrive as a KeptText (core.text_chunks): the daemon kept a big string of the
request out of memory. Gating it needs only its length, start, end and content address; one
that no gate takes (an exempt tool, or short once decoded) is read back whole, as a part to
replace with `gate` None.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated

from tokend.core.config_rules import at_least
from tokend.core.text_chunks import KeptText, text_head, text_length, text_tail, whole_text
from tokend.core.types import Part, StoredPart, ToolResultPart

PREVIEW = "preview"
MIDDLE_OUT = "middleOut"


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Gate sizes in characters; tool names as the agent names its tools (case-insensitive)."""

    single_result_chars: Annotated[int, at_least(1)] = 50_000
    message_results_chars: Annotated[int, at_least(1)] = 200_000
    preview_chars: Annotated[int, at_least(0)] = 2_000
    # what a middle-out cut keeps (start + end)
    middle_out_chars: Annotated[int, at_least(0)] = 20_000
    middle_out_tools: tuple[str, ...] = ()
    exempt_tools: tuple[str, ...] = (
        "Read", "read", "read_file", "view", "view_file", "NotebookRead",
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Gated:
    """One gated result: its index among the message's parts, the part as the model sees it
    and the original kept whole under `ref` (a KeptText stays one). With `part.gate` None, the
    part is a KeptText output no gate took, read back whole: replace it, store nothing."""

    index: int
    part: ToolResultPart
    original: str


def output_ref(text: str) -> str:
    """The content address of an output: "sha256:" and the hex digest of its UTF-8 bytes."""
    if isinstance(text, KeptText):
        return text.ref
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _is_exempt(name: str, cfg: GateConfig) -> bool:
    return _short(name) in _lower(cfg.exempt_tools)


def gate_parts(parts: Sequence[Part], cfg: GateConfig = GateConfig()) -> list[Gated]:
    """Which tool results of one message to gate, and how (see the module docstring)."""
    sizes = {
        i: text_length(p.output)
        for i, p in enumerate(parts)
        if isinstance(p, ToolResultPart) and p.gate is None
    }
    candidates = {i for i in sizes if not _is_exempt(_result(parts, i).name, cfg)}
    gated: dict[int, ToolResultPart] = {}
    for i in sorted(candidates):
        if sizes[i] > cfg.single_result_chars:
            gated[i] = _gate(_result(parts, i), cfg)
    total = sum(len(gated[i].output) if i in gated else n for i, n in sizes.items())
    rest = sorted((i for i in candidates if i not in gated), key=lambda i: (-sizes[i], i))
    for i in rest:
        if total <= cfg.message_results_chars:
            break
        part = _gate(_result(parts, i), cfg)
        if len(part.output) >= sizes[i]:
            continue  # a preview would not be shorter
        gated[i] = part
        total -= sizes[i] - len(part.output)
    for i in sizes.keys() - gated.keys():
        part = _result(parts, i)
        if isinstance(part.output, KeptText):
            gated[i] = replace(part, output=whole_text(part.output))
    return [Gated(i, gated[i], _result(parts, i).output) for i in sorted(gated)]


def _result(parts: Sequence[Part], index: int) -> ToolResultPart:
    part = parts[index]
    assert isinstance(part, ToolResultPart)
    return part


def _gate(part: ToolResultPart, cfg: GateConfig) -> ToolResultPart:
    text = part.output
    length = text_length(text)
    ref = output_ref(text)
    read = f'toolOutput/read {{"ref": "{ref}"}} returns it in slices'
    if _short(part.name) in _lower(cfg.middle_out_tools):
        half = cfg.middle_out_chars // 2
        cut = length - 2 * half
        shown = (
            f"{text_head(text, half)}\n[…{cut:,} characters truncated; the whole output is kept: "
            f"{read}…]\n{text_tail(text, half)}"
        )
        kind = MIDDLE_OUT
    else:
        shown = (
            f"{text_head(text, cfg.preview_chars)}\n\n[Tool output too large to show whole: {length:,} "
            f"characters, of which the first {cfg.preview_chars:,} are above. The whole output "
            f"is kept: {read}.]"
        )
        kind = PREVIEW
    return replace(part, output=shown, gate=kind, ref=ref, original_chars=length)


def _short(name: str) -> str:
    return name.rsplit("__", 1)[-1].lower()


def _lower(names: Sequence[str]) -> set[str]:
    return {n.lower() for n in names}


@dataclass(frozen=True, slots=True)
class GatedOutput:
    """What a gate did to one part of a stored message (for the append result and the
    snapshot); sizes in characters."""

    part_index: int
    call_id: str
    name: str
    gate: str
    ref: str
    original_chars: int
    shown_chars: int


def gated_outputs(parts: Sequence[StoredPart]) -> list[GatedOutput]:
    """The gated tool results among a message's parts."""
    found = []
    for index, stored in enumerate(parts):
        part = stored.part
        if isinstance(part, ToolResultPart) and part.gate is not None and part.ref is not None:
            found.append(
                GatedOutput(
                    index,
                    part.call_id,
                    part.name,
                    part.gate,
                    part.ref,
                    part.original_chars or 0,
                    len(part.output),
                )
            )
    return found
