"""Fitting a map to a budget (core.repomap.render): the prefix search finds what a scan from
the start finds, for any count that grows with the prefix, with few counts; a fitted map reads
each line once."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap.render import RankedDefinition, _longest_within, fit_map


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.integers(0, 40), min_size=0, max_size=400),
    budget=st.integers(0, 6000),
)
def test_the_prefix_search_finds_the_longest_prefix_within_budget(steps: list[int], budget: int):
    totals = [0]
    for s in steps:
        totals.append(totals[-1] + s)
    asked: list[int] = []

    def tokens_of(n: int) -> int:
        asked.append(n)
        return totals[n]

    got = _longest_within(len(steps), budget, tokens_of)
    expected = max(n for n, t in enumerate(totals) if t <= budget)
    assert got == expected
    assert len(set(asked)) <= 2 * math.ceil(math.log2(len(steps) + 2)) + 4
    assert max(asked, default=0) <= max(2 * expected, 16)  # no long prefix rendered


def test_a_fit_reads_each_line_once_and_counts_fewer_texts_than_a_bisection():
    ranked = [RankedDefinition(f"src/m{i:04d}.py", 0) for i in range(3000)]
    reads: list[tuple[str, int]] = []
    counted: list[int] = []

    def text_of(path: str, line: int) -> str:
        reads.append((path, line))
        return f"def handler_{path[-7:-3]}(request, context):"

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text) // 4

    fitted = fit_map(ranked, 2048, count, text_of)
    assert 0 < fitted.tokens <= 2048
    assert len(reads) == len(set(reads))
    assert len(counted) <= 10 + 64  # the search, then at most the extra candidates
