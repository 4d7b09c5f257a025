"""Where the map's personalized PageRank (core.repomap.graph) restarts: the focus files and
the files defining a focus identifier share FOCUS_WEIGHT, a text focus's best lexical hits
(`seeds`, core.repomap.rank.seeds) SEED_WEIGHT by their shares, over a floor of 1.0 spread over
every file; normalized to sum to 1."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tokend.core.repomap.edges import MAX_DEFINERS
from tokend.core.repomap.rank import SEED_WEIGHT
from tokend.core.repomap.store import TagTable, name_key

FOCUS_WEIGHT = 100.0  # restart mass of the focus, against 1.0 spread over every file

Array = Any


def restart_of(
    table: TagTable, rows: Iterable[int], identifiers: Iterable[str], seeds: Mapping[int, float]
) -> Array:
    """The restart vector for the focus files' `rows`, its `identifiers` and `seeds`."""
    n = len(table.paths)
    restart = np.full(n, 1.0 / n)
    wanted = set(rows)
    for name in identifiers:
        defining = table.definer_rows(name_key(name))
        if len(defining) <= MAX_DEFINERS:
            wanted.update(defining.tolist())
    for i in sorted(wanted):
        restart[i] += FOCUS_WEIGHT / len(wanted)
    for i, share in sorted(seeds.items()):
        restart[i] += SEED_WEIGHT * share
    restart /= restart.sum()
    return restart
