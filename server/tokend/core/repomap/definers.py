"""Who defines each name (core.repomap.store's `starts`, `rows`, `groups`) after a tracked
change, edited where the columns are: the starts shifted range by range in their own buffer,
and the group columns renumbered a block at a time from the few groups that moved.

Issue 22: on the kernel (2.2 million groups) a one-file change held a count per group, the
old starts cast to int64 by a search (numpy's searchsorted casts an int32 column to the dtype
of int64 needles) and the new starts side by side, then a renumbering column as large: 26-28
MiB above the tables for a moment, the daemon's largest temporary after its first map. Here,
beside the columns, only arrays as long as the change's own entries and a block's are held.
"""

from __future__ import annotations

import numpy as np

from tokend.core.repomap.columns import Array, edited_in_place

REGROUP_BLOCK = 1 << 16  # entries of a group column renumbered at once (about 20 bytes each
# held meanwhile)


def shift_starts(starts: Array, steps: Array, deltas: Array) -> None:
    """starts[i] += the sum of deltas[k] whose steps[k] <= i, in place (a range at a time:
    no temporary as long as the column)."""
    if not len(steps):
        return
    order = np.argsort(steps, kind="stable")
    points, first = np.unique(steps[order], return_index=True)
    totals = np.cumsum(np.add.reduceat(deltas[order], first))
    ends = np.append(points[1:], len(starts))
    for a, b, shift in zip(points.tolist(), ends.tolist(), totals.tolist(), strict=True):
        if shift:
            starts[a:b] += shift


def vanished_groups(starts: Array, gone_groups: Array, added_groups: Array) -> Array:
    """The groups no file defines after the change (ascending): among those that lost
    entries (`gone_groups`, one a dropped entry), those left with none once `added_groups`
    (one an added entry of a known name) are counted."""
    lost, n_lost = np.unique(gone_groups, return_counts=True)
    if not len(lost):
        return lost
    added = np.sort(added_groups)
    n_added = np.searchsorted(added, lost, side="right") - np.searchsorted(added, lost)
    left = (starts[lost + 1] - starts[lost]) - n_lost + n_added
    return lost[left == 0]


def new_starts(starts: Array, where: Array, counts: Array) -> Array:
    """Where each new name's definers start (the new names sorted, each before old group
    where[k], with counts[k] entries), read from the starts already shifted: the shifted
    start of old group w is after every new name placed before it."""
    if not len(where):
        return np.zeros(0, dtype=starts.dtype)
    total = np.cumsum(counts)
    last = np.searchsorted(where, where, side="right") - 1  # the last new name before w
    return (starts[where] - (total[last] - total + counts)).astype(starts.dtype)


def respliced_starts(
    starts: Array, gone_groups: Array, added_groups: Array, where: Array, counts: Array
) -> tuple[Array, Array]:
    """The starts after a change, in `starts`' buffer when it fits: each dropped entry
    (its group in `gone_groups`) leaves, each added entry of a known name (`added_groups`)
    and of a new name (`where`, `counts`: np.unique's of the new keys, placed as
    np.searchsorted(groups, key)) comes in. Returns (the starts, the vanished groups)."""
    vanished = vanished_groups(starts, gone_groups, added_groups)
    steps = np.concatenate([gone_groups + 1, added_groups + 1, where]).astype(np.int64)
    deltas = np.concatenate([
        np.full(len(gone_groups), -1, dtype=np.int64),
        np.ones(len(added_groups), dtype=np.int64),
        counts.astype(np.int64),
    ])  # fmt: skip
    shift_starts(starts, steps, deltas)
    born = new_starts(starts, where, counts)
    inserted = where - np.searchsorted(vanished, where)
    return edited_in_place(starts, vanished, inserted, born), vanished


def regroup_column(column: Array, where: Array, vanished: Array) -> None:
    """Each group g >= 0 of `column` renumbered in place, a block at a time: -1 if it
    vanished, else g less the vanished groups before it plus the new names placed at or
    before it (`where`, ascending)."""
    for start in range(0, len(column), REGROUP_BLOCK):
        part = column[start : start + REGROUP_BLOCK]  # a view: assigned in place
        known = part >= 0
        old = part[known]
        shift = np.searchsorted(where, old, side="right")
        at = np.searchsorted(vanished, old)
        shift -= at
        shift += old  # the new groups
        if len(vanished):
            np.minimum(at, len(vanished) - 1, out=at)
            shift[vanished[at] == old] = -1
        part[known] = shift
