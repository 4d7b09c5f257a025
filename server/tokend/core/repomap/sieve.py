"""Which of a column's values are among a few sorted ones, in one pass over the column and
with bounded temporaries (core.repomap.rank's BM25 reads the kernel's millions of names so)."""

from __future__ import annotations

from typing import Any

import numpy as np

BUCKETS = 1 << 20  # of the membership sieve (member)
SIEVE_BLOCK = 1 << 16  # values sieved at once

Array = Any


def member(values: Array, ascending: Array, table: Array | None = None) -> Array:
    """The positions (ascending) of the values in `ascending` (sorted, small): a bucket table of
    the query's low bits sifts the values in one pass, and only those in a query bucket are
    searched (no sort of the kernel's millions of references, as np.isin would make); a block
    at a time, and no flag per value (issue 22: 4 MiB a request for the kernel's references).
    `table`: `buckets(ascending)`, when the caller sifts several parts by one query."""
    if not len(ascending) or not len(values):
        return np.zeros(0, dtype=np.int64)
    table = buckets(ascending) if table is None else table
    found = []
    for start in range(0, len(values), SIEVE_BLOCK):  # bounded temporaries (the kernel)
        part = values[start : start + SIEVE_BLOCK]
        maybe = np.flatnonzero(table[(part % BUCKETS).astype(np.intp)])
        at = np.minimum(np.searchsorted(ascending, part[maybe]), len(ascending) - 1)
        found.append(start + maybe[ascending[at] == part[maybe]])
    return np.concatenate(found)


def buckets(ascending: Array) -> Array:
    """member's bucket table of `ascending`: a flag per value of its low bits."""
    flags = np.zeros(BUCKETS, dtype=bool)
    flags[(ascending % BUCKETS).astype(np.intp)] = True
    return flags
