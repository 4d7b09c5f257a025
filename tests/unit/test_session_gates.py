"""Tool-output gates: which results of a message the model sees only in part (sizes in
characters, checked against the lengths of the texts this test builds)."""

from __future__ import annotations

import hashlib

from tokend.core.session.gates import GateConfig, gate_parts
from tokend.core.types import TextPart, ToolResultPart


def result(call_id: str, size: int, name: str = "Bash") -> ToolResultPart:
    return ToolResultPart(call_id, name, (call_id + "-" + "x" * size)[:size])


def test_a_result_over_50000_characters_is_shown_as_a_2000_character_preview():
    big = result("c1", 50_001)
    (gated,) = gate_parts([TextPart("look"), big, result("c2", 50_000)])
    assert gated.index == 1 and gated.original == big.output
    assert gated.part.output.startswith(big.output[:2_000])
    assert big.output[:2_001] not in gated.part.output
    assert gated.part.ref == "sha256:" + hashlib.sha256(big.output.encode()).hexdigest()
    assert gated.part.original_chars == 50_001 and gated.part.gate == "preview"


def test_results_over_200000_together_lose_their_largest_first_until_the_rest_fit():
    parts = [
        result(f"c{i}", size) for i, size in enumerate([45_000, 49_000, 30_000, 48_000, 47_000])
    ]
    gated = gate_parts(parts)
    assert [g.index for g in gated] == [1]  # 219,000 - 49,000 + preview fits under 200,000
    shown = sum(len(g.part.output) for g in gated) + sum(
        len(p.output) for i, p in enumerate(parts) if i not in {g.index for g in gated}
    )
    assert shown <= 200_000


def test_file_reads_are_exempt_and_middle_out_tools_keep_both_ends():
    cfg = GateConfig(middle_out_tools=("shell",))
    read = result("r", 300_000, name="Read")
    shell = ToolResultPart("s", "shell", "HEAD" + "y" * 100_000 + "TAIL")
    gated = gate_parts([read, shell], cfg)
    assert [g.index for g in gated] == [1]
    cut = gated[0].part.output
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and gated[0].part.gate == "middleOut"
    assert len(cut) < 20_500 and "characters truncated" in cut


def test_a_part_gated_once_is_never_gated_again():
    (first,) = gate_parts([result("c1", 80_000)])
    assert gate_parts([first.part]) == []
