"""The repo map's text, and fitting it to a token budget.

`render_map`: each chosen file's path, then its chosen defining lines in line order, "⋮" where
lines are skipped; files in path order (a stable order: the same choice, the same text). The
lines' text comes from the caller (`LineText`: the file as it is now, read when shown), cut by
core.repomap.tags.line_text.

`fit_map` takes the longest prefix of the ranked definitions whose text the caller's counter
puts within the budget (doubling from GALLOP_START, then binary search: the count grows with
the prefix; a map of one definition per file reads no more files than about twice what it
shows, where a plain bisection over the kernel's 4,000 candidates read thousands), then tries the next
EXTRA_CANDIDATES one by one and keeps each that still fits (until MAX_MISSES in a row do not). The text it returns is counted
whole by that counter and is never over the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tokend.core.repomap.tags import line_text

EXTRA_CANDIDATES = 64
GALLOP_START = 16  # the first prefix tried (then 32, 64 ...: see fit_map)
MAX_MISSES = 8  # the fill stops after this many candidates in a row did not fit


LineText = Callable[[str, int], str]  # (path, 0-based line) -> that line's text as it is now


@dataclass(frozen=True, slots=True)
class RankedDefinition:
    path: str
    line: int  # 0-based


@dataclass(frozen=True, slots=True)
class FittedMap:
    text: str
    tokens: int  # of `text`, by the counter fit_map was given
    files: tuple[str, ...]  # the files the text shows, in path order
    definitions: int
    ranked: tuple[tuple[str, float], ...] = ()  # the files shown, best first, with their score

    def in_rank_order(self, scores: dict[str, float]) -> FittedMap:
        """This map with its files ranked by `scores` (higher first; ties by path)."""
        order = sorted(self.files, key=lambda p: (-scores.get(p, 0.0), p))
        return replace(self, ranked=tuple((p, scores.get(p, 0.0)) for p in order))


def render_map(
    chosen: Iterable[RankedDefinition],
    text_of: LineText,
    blocks: dict[tuple[str, tuple[int, ...]], str] | None = None,
) -> str:
    """The map's text; `blocks` keeps each file's block (its path and lines) for the next
    call: a fit renders two dozen trial maps that differ in a few files."""
    by_file = lines_of(chosen)
    known = {} if blocks is None else blocks
    out: list[str] = []
    for path in sorted(by_file):
        lines = tuple(sorted(by_file[path]))
        block = known.get((path, lines))
        if block is None:
            block = known[path, lines] = _file_block(path, lines, text_of)
        out.append(block)
    return "\n".join(out)


def _file_block(path: str, lines: tuple[int, ...], text_of: LineText) -> str:
    """A file's part of the map: its path, its lines, "⋮" where lines are skipped, and an
    empty line."""
    out = [f"{path}:"]
    last = None
    for line in lines:
        if last is not None and line > last + 1:
            out.append("⋮")
        out.append(f"│{line_text(text_of(path, line))}")
        last = line
    out.append("")
    return "\n".join(out)


def lines_of(ranked: Iterable[RankedDefinition]) -> dict[str, set[int]]:
    """Each file's lines among the definitions `ranked` (a map's, or its candidates')."""
    wanted: dict[str, set[int]] = {}
    for candidate in ranked:
        wanted.setdefault(candidate.path, set()).add(candidate.line)
    return wanted


def fit_map(
    ranked: Sequence[RankedDefinition],
    budget_tokens: int,
    count: Callable[[str], int],
    text_of: LineText,
) -> FittedMap:
    """The most relevant definitions of `ranked` rendered within `budget_tokens` as `count`
    counts them; empty when not even one fits."""
    counted: dict[int, int] = {}
    seen: dict[tuple[str, int], str] = {}
    blocks: dict[tuple[str, tuple[int, ...]], str] = {}  # each file's block, rendered once

    def line_of(path: str, line: int) -> str:  # each line read once per fit
        key = (path, line)
        if key not in seen:
            seen[key] = text_of(path, line)
        return seen[key]

    def tokens_of(n: int) -> int:
        if n not in counted:
            counted[n] = count(render_map(ranked[:n], line_of, blocks)) if n else 0
        return counted[n]

    low = _longest_within(len(ranked), budget_tokens, tokens_of)
    chosen = list(ranked[:low])
    text = render_map(chosen, line_of, blocks)
    tokens = tokens_of(low)
    misses = 0
    for extra in ranked[low + 1 : low + 1 + EXTRA_CANDIDATES]:
        if misses >= MAX_MISSES:
            break
        trial = render_map([*chosen, extra], line_of, blocks)
        trial_tokens = count(trial)
        if trial_tokens <= budget_tokens:
            chosen.append(extra)
            text, tokens = trial, trial_tokens
            misses = 0
        else:
            misses += 1
    while chosen and tokens > budget_tokens:  # a count that shrank as text grew: stay under
        chosen.pop()
        text = render_map(chosen, line_of, blocks)
        tokens = count(text) if chosen else 0
    if not chosen:
        return FittedMap("", 0, (), 0)
    return FittedMap(text, tokens, tuple(sorted({c.path for c in chosen})), len(chosen))


def _longest_within(n: int, budget: int, tokens_of: Callable[[int], int]) -> int:
    """The longest prefix (0..n) whose count is within `budget`, the count growing with the
    prefix: the first probe GALLOP_START, then where the counts known so far put the budget
    (tokens taken as growing in step with the prefix), at most twice the longest prefix known
    to fit until one is over (no long prefix rendered, nor its files read, when a short one
    fills the budget); then between the two, every other probe halving the bracket (never
    more probes than twice a binary search's)."""
    low, high = 0, n  # tokens_of(low) <= budget; the answer is in [low, high]
    probe, above, step = min(GALLOP_START, n), None, 0
    while low < high:
        got = tokens_of(probe)
        if got <= budget:
            low = probe
        else:
            high, above = probe - 1, (probe, got)
        if low >= high:
            break
        base = tokens_of(low)
        if above is None:  # no prefix known to be over: gallop (at most doubling)
            guess = min(2 * low, low * budget // base) if low and base else 2 * max(low, 1)
        else:
            step += 1
            if step % 2 == 0:  # halving: the bracket shrinks whatever the counts do
                guess = (low + high + 1) // 2
            elif above[1] > base:  # between the two known counts
                guess = low + (budget - base) * (above[0] - low) // (above[1] - base)
            else:
                guess = (low + high + 1) // 2
        probe = max(low + 1, min(high, guess))
    return low
