"""The file rank's fusion of its signals (core.repomap.rank): reciprocal ranks, and a margin.

Each signal ranks the files by its score, ties sharing the better rank, and a file's score is
the sum over signals of weight / (K + its rank) for signals that have evidence for it, plus, for
a signal the fusion scales, its score over the signal's best times that scale: reciprocal ranks
alone flatten a margin (a file far ahead of the next on what a text says weighs as much as one
a hair ahead), the scaled part keeps some of it. FILE_FUSION for a focus with files,
TEXT_FUSION for a task's text alone. The graph's rank is not fused there (weight 0:
bench.repomap_fit measured it, on the tuning repositories only, as lowering recall beside
`near`); it breaks ties, the files no signal has evidence for among them; for a focus of
identifiers alone it is the only signal (NAME_FUSION).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

Array = Any


@dataclass(frozen=True, slots=True)
class Fusion:
    """The weight of each fused signal and the reciprocal rank's K (`own_k`: a signal's own);
    `scaled`: a signal's score over its best, times this, added too (a margin reciprocal ranks
    flatten: a file far ahead on a signal keeps some of its lead)."""

    weights: dict[str, float]
    k: float
    scaled: dict[str, float] = field(default_factory=dict)
    own_k: dict[str, float] = field(default_factory=dict)  # a signal's K, where not `k`

    def uses(self, name: str) -> bool:
        """Whether the signal adds anything (one weighed 0 and not scaled: not worked out)."""
        return bool(self.weights.get(name) or self.scaled.get(name))


# chosen by bench.repomap_fit on the tuning repositories alone: a file focus on the first six
# (two each of Python, TypeScript, Go; refitted with 384 words a file, core.repomap.tags.
# WORDS_MAX: 0.433 -> 0.4405 on their mean of R@1..10); a text's margin on all twelve (issue
# 24's ninth pass: each score over its best, lexical 1, said 0.5, near 0.25, on top of the
# reciprocal ranks: 0.447 -> 0.456 on the twelve's mean, up on ten of them); a file focus's on
# fifteen (issue 24's tenth pass, bench.repomap_fit_file: the file name's words, `stem`, and a
# margin: 0.403 -> 0.422 on their mean of R@1..10, up on each of the three groups of trees);
# both refitted on eighteen (issue 24's eleventh pass, bench.repomap_refit): a file focus's
# kept (no move gains), a text's K 8 -> 16 (0.4201 -> 0.4217, up on 7 trees, down on 1); a
# text's `compounds` (core.repomap.said) on twenty-one (issue 24's twelfth pass: 0.4320 -> 0.4355,
# up on 12 trees, down on 2, up on each of the five groups of trees; no other move gains); a
# text's `whole` (core.repomap.whole) by its own reciprocal rank: weight 0.75, K 1, chosen on
# thirty-three (issue 24's sixteenth pass, bench.repomap_whole: weights 0.25-2 x K 1-30, the best
# mean that lowers no group, 0.4348 -> 0.4413; the fifteenth pass's weight 1, K 4: 0.4406 and
# the first six down 0.0005)
# A file focus's `cochange` (core.repomap.cochange) by its own reciprocal rank, weight 0.125, K 1,
# chosen on forty-five (issue 24's twenty-first pass, bench.repomap_cochange: weights 0.125-2
# x K 1-60; 0.4531 -> 0.4699 on their mean of R@1..10, up on 12 of the 13 groups)
FILE_FUSION = Fusion(
    {"lexical": 1.0, "near": 1.0, "said": 1.0, "stem": 0.5, "cochange": 0.125},
    16.0,
    {"lexical": 0.005, "said": 0.02, "stem": 0.005},
    {"cochange": 1.0},
)
TEXT_FUSION = Fusion(
    {"lexical": 1.0, "near": 0.5, "said": 0.5, "compounds": 2.0, "whole": 0.75},
    16.0,
    {"lexical": 1.0, "said": 0.5, "near": 0.25, "compounds": 0.05},
    {"whole": 1.0},
)
NAME_FUSION = Fusion({"graph": 1.0}, 60.0)  # identifiers alone: the graph's rank is all there is


def fusion_for(files: bool, text: bool) -> Fusion:
    """A focus with files, a task's text alone, or neither (identifiers, or nothing)."""
    return FILE_FUSION if files else TEXT_FUSION if text else NAME_FUSION


def ranks(score: Array) -> Array:
    """Each file's rank by score (1: best; ties share the better rank)."""
    ordered = np.sort(score)[::-1]
    return np.searchsorted(-ordered, -score, side="left") + 1


def fused(scores: dict[str, Array], n: int, fusion: Fusion = FILE_FUSION) -> Array:
    """Reciprocal-rank fusion of the signals' scores, and each `scaled` signal's score over its
    best (a signal adds nothing where it is 0; one the fusion gives no weight adds nothing)."""
    total = np.zeros(n)
    for name in sorted(scores):
        weight, score = fusion.weights.get(name, 0.0), scores[name]
        if weight:
            k = fusion.own_k.get(name, fusion.k)
            total += np.where(score > 0, weight / (k + ranks(score)), 0.0)
        lift, top = fusion.scaled.get(name, 0.0), float(score.max()) if n else 0.0
        if lift and top > 0:
            total += lift * (np.maximum(score, 0.0) / top)  # (the best's own share is 1 exactly:
            # lift * score first loses a subnormal score's digits, and the best less than 1)
    return total
