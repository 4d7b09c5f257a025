"""A map request's choice of definitions (core.repomap.choice.chosen_definitions) goes through
the files that fill the limit a block of definitions at a time and weighs only the names it
needs (issue 22: on the kernel, whose big headers hold thousands of definitions each, it held
every one of those files' definitions in seven columns at once, and a weight per defined name
twice: 60-115 MiB at the daemon's peak). Counted by tracemalloc, which sees numpy's arrays:
bytes, not time. The choice is checked against a plain Python reading of the rule."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from tokend.core.repomap import choice
from tokend.core.repomap.edges import MAX_DEFINERS, Edges
from tokend.core.repomap.keys import name_key
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.store import TagTable

BLOCK = 1 << 16  # the definitions a block may hold (choice.DEFS_BLOCK)


def _table(files: int, defs: int, refs: int, names: int, seed: int) -> tuple[TagTable, Edges]:
    """Random tags: `files` files of up to `defs` definitions and `refs` references each, over
    `names` names (keys of n0, n1, ...: a focus identifier can name them); the graph's row
    totals (all name_flow reads of the rows), a few files' 0."""
    rng = np.random.default_rng(seed)
    keys = np.array([name_key(f"n{i}") for i in range(names)], dtype=KEY)
    packed = {}
    for i in range(files):
        d = int(rng.integers(0, defs + 1))
        def_keys = keys[rng.integers(0, names // 2 if i % 3 else names, d)]
        lines = np.sort(rng.integers(0, 10 * defs + 1, d)).astype(np.int32)
        ref_keys = np.unique(keys[rng.integers(0, names, int(rng.integers(0, refs + 1)))])
        counts = rng.integers(1, 9, len(ref_keys)).astype(np.int32)
        order = np.lexsort((def_keys, lines))
        packed[f"f{i:05}.c"] = PackedTags(def_keys[order], lines[order], ref_keys, counts)
    table = TagTable()
    table.apply(packed, track=False)
    table.groups()
    totals = rng.random(files) + 0.5
    totals[rng.integers(0, files, files // 20)] = 0.0
    empty = np.zeros(0)
    return table, Edges(np.zeros(files + 1, dtype=np.int64), empty.astype(np.int32), empty, totals)


def _expected(
    t: TagTable, edges: Edges, rank: np.ndarray, order: np.ndarray, wanted: set[int],
    focus: list[int], limit: int,
) -> tuple[list[int], list[int]]:  # fmt: skip
    """The rule, read plainly: the flow to a name sums, over each reference (in table order)
    to a name of 1..MAX_DEFINERS definers from a file whose row total is not 0, the file's rank
    x sqrt(occurrences) x (0.1 for a leading underscore) / definers / the row total; rounded
    to 12 decimals. Then a focus identifier's definitions, each file's best PER_FILE (weight
    down, then position), the rest; each run by (the file's place, weight down, position)."""
    keys = [int(k) for k in t.groups()[t.d_group]]
    rows = np.repeat(np.arange(len(t.paths)), np.diff(t.d_off)).tolist()
    definers: dict[int, set[int]] = {}
    for key, row in zip(keys, rows, strict=True):
        definers.setdefault(key, set()).add(row)
    flow: dict[int, float] = {}
    for row in range(len(t.paths)):
        for e in range(int(t.r_off[row]), int(t.r_off[row + 1])):
            key, n = int(t.r_key[e]), len(definers.get(int(t.r_key[e]), ()))
            if 1 <= n <= MAX_DEFINERS and edges.totals[row] > 0:
                scale = (0.1 if key & 1 else 1.0) / n
                term = math.sqrt(float(t.r_count[e])) * scale / edges.totals[row] * rank[row]
                flow[key] = flow.get(key, 0.0) + term
    weight = [float(np.round(flow.get(k, 0.0), choice.RANK_DECIMALS)) for k in keys]
    place = {int(r): p for p, r in enumerate(order)}
    items = []
    for row, p in place.items():
        mine = sorted(
            range(int(t.d_off[row]), int(t.d_off[row + 1])), key=lambda e: (-weight[e], e)
        )
        for nth, e in enumerate(mine):
            hit = keys[e] in wanted
            items.append(((not hit, nth >= choice.PER_FILE and not hit, p, -weight[e], e), e))
    for e, key in enumerate(keys):  # a focus identifier's definitions in files not in `order`
        if key in wanted and rows[e] not in place and rows[e] not in focus:
            items.append(((False, False, len(order), -weight[e], e), e))
    best = [e for _, e in sorted(items)[:limit]]
    return [rows[e] for e in best], [int(t.d_line[e]) for e in best]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("limit", [1, 7, 40, 5000])
def test_the_choice_follows_the_rule(
    monkeypatch: pytest.MonkeyPatch, seed: int, limit: int
) -> None:
    monkeypatch.setattr(
        choice, "DEFS_BLOCK", 32, raising=False
    )  # many blocks, files across their ends
    t, edges = _table(files=60, defs=40, refs=30, names=200, seed=seed)
    rng = np.random.default_rng(seed)
    rank = rng.random(60)
    rank /= rank.sum()
    focus = [3, 17]
    order = np.array([r for r in rng.permutation(60).tolist() if r not in focus], dtype=np.int64)
    if seed == 3:
        order = order[:30]  # (a caller's order may leave files out: their hits still come)
    identifiers = frozenset({"n5", "n11", "n150", "n199", "nowhere"})
    wanted = {name_key(i) for i in identifiers}
    got = choice.chosen_definitions(t, edges, rank, order, identifiers, focus, limit)
    expected = _expected(t, edges, rank, order, wanted, focus, limit)
    assert got == expected
    assert len(expected[0]) == (limit if limit < 1000 else len(expected[0]))


def test_the_choice_holds_a_block_of_definitions_not_the_files() -> None:
    """100 files of 4,000 definitions on average (400,000 in all): their 99 first definitions
    do not fill a limit of 120, so every definition of every file is gone through. Within a
    block's columns, the needed names' slot and flow (a 25,000-file part of the kernel: a text
    focus's files held 674,000 definitions, of 1,131,000 names)."""
    t, edges = _table(files=100, defs=8_000, refs=2_000, names=300_000, seed=22)
    rng = np.random.default_rng(5)
    rank = rng.random(100)
    rank /= rank.sum()
    order = rng.permutation(100)[1:].astype(np.int64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        files, _ = choice.chosen_definitions(t, edges, rank, order, frozenset({"n7"}), [], 120)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(files) == 120
    groups = len(t.groups())
    bound = 4 * groups + 8 * groups + 160 * BLOCK  # main: 24.9 MiB, this: 9.1
    assert peak <= bound, f"{peak / 2**20:.1f} MiB over {bound / 2**20:.1f}"


def test_the_flow_of_every_needed_name_is_held_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A choice that needs a weight for each of a million names (files of unique definitions,
    whose first ones do not fill the limit: every file is gone through): the weights are rounded in place, one float a name (main rounded them
    into a copy: two). Small blocks, so the per-name arrays are what the peak holds."""
    monkeypatch.setattr(choice, "DEFS_BLOCK", 1024)
    monkeypatch.setattr(choice.graph_rows, "FLOW_BLOCK", 1024)
    files = 50
    t, edges, _ = _unique_definitions(files, 20_000, 2000, seed=9)
    groups = len(t.groups())
    rank = np.full(files, 1.0 / files)
    order = np.arange(files, dtype=np.int64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        chosen = choice.chosen_definitions(t, edges, rank, order, frozenset(), [], 120)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(chosen[0]) == 120
    bound = 13 * groups + (2 << 20)  # the slot, the flow, a flag: main 8 bytes a name more
    assert peak <= bound, f"{peak / 2**20:.1f} MiB over {bound / 2**20:.1f}"


def test_a_kernel_like_choice_holds_small_blocks() -> None:
    """200 files of up to 10,000 definitions and 20,000 references (930,000 definitions, 2
    million references, 690,000 names: about a third of the kernel's), a limit of 4,000 (a
    4,096-token map's candidates): the choice goes through blocks of about 16,384 definitions
    and weighs 32,768 references at a time (issue 22: blocks of 65,536 and 131,072 held 14.2
    MiB at the peak of each map request here, 17-20 MiB on the kernel, the daemon's top
    temporary with a change's)."""
    t, edges = _table(files=200, defs=10_000, refs=20_000, names=2_000_000, seed=22)
    rng = np.random.default_rng(5)
    rank = rng.random(200)
    rank /= rank.sum()
    order = rng.permutation(200)[1:].astype(np.int64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        files, _ = choice.chosen_definitions(t, edges, rank, order, frozenset({"n7"}), [], 4_000)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(files) == 4_000
    assert peak < 11.5 * 2**20, f"{peak / 2**20:.1f} MiB"  # main: 14.2 MiB


def test_the_needed_names_are_found_without_a_slot_per_group() -> None:
    """1,000,000 names, 500 defined by each of 2,000 files; a limit of 300 (a map's
    candidates) is filled by the first 301 files, so about 150,000 names are weighed. Main held
    a place per group (int32, 4 MB here; 8.8 MB on the kernel's 2.2 million names) with a flag
    per group beside it; now a flag per group, then only the needed names' groups and flow."""
    files = 2_000
    t, edges, rng = _unique_definitions(files, 500, 300, seed=12)
    groups = len(t.groups())
    rank = rng.random(files)
    rank /= rank.sum()
    order = rng.permutation(files).astype(np.int64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        chosen = choice.chosen_definitions(t, edges, rank, order, frozenset(), [], 300)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert chosen[0][:3] == order[:3].tolist()  # each file's best first, files in rank order
    assert len(chosen[0]) == 300
    assert peak < 4 * groups, f"{peak / 2**20:.1f} MiB"  # main: 6.4 MiB, now 3.0


def _unique_definitions(
    files: int, defs: int, refs: int, seed: int
) -> tuple[TagTable, Edges, np.random.Generator]:
    """`files` files each defining `defs` names no other file defines and referring to `refs`
    names drawn from all of them, no edges between files; the generator, to draw on."""
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 1 << 62, size=files * defs + 1000, dtype=np.uint64))
    keys = rng.permutation(keys[: files * defs].astype(KEY))
    packed = {}
    for i in range(files):
        own = np.sort(keys[i * defs : (i + 1) * defs])
        named = np.unique(rng.choice(keys, refs))
        packed[f"f{i:04}.c"] = PackedTags(own, np.arange(defs, dtype=np.int32), named,
                                          np.ones(len(named), dtype=np.int32))  # fmt: skip
    t = TagTable()
    t.apply(packed, track=False)
    edges = Edges(np.zeros(files + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                  np.zeros(0), np.ones(files))  # fmt: skip
    return t, edges, rng
