"""The fit behind core.counting.estimate_families' CODE weights (issue 20): run it to fit them again.

    .venv/bin/python -m bench.claude_fit

Fitted on files disjoint from the ones bench/claude.py measures: that bench scores the
estimator corpus's draw of 40 files a source (bench.estimator.gather_corpus, its seed); this fit
draws another 300 *.py of site-packages, 300 *.js of node's global node_modules, 150 *.md and
150 *.json (seed FIT_SEED), drops every text that draw also holds, and fits on the files
`classify` calls code. Oracle: the family's exact count (adapters.claude_fast, ctok's count).
Non-negative least squares of the relative error, each source weighted equally, the
characters-above-ASCII weights held at their values (fitted on the CJK texts); "uppers" is fitted
as capitals that start a run of capitals, apart from those after a capital (`caps_tail`), then
written back as FAMILY_FEATURES' uppers and caps_tail. Prints the weights and the held-out figures.
"""

from __future__ import annotations

import hashlib
import random
import statistics

import numpy as np
from scipy.optimize import nnls

from bench.estimator import (
    Sample,
    _read_texts,
    _walk,
    gather_corpus,
    node_global_modules,
    site_packages,
)
from tokend.adapters.claude_tokens import ClaudeCounter
from tokend.core.counting.estimate import classify
from tokend.core.counting.estimate_families import (
    FAMILY_FEATURES,
    FAMILY_WEIGHTS,
    family_estimate_tokens,
    family_features,
)
from tokend.core.types import ContentClass

FIT_SEED = 99
FAMILIES = ("claude-v3", "claude-v4.7")  # v4.8 is v4.7's vocabulary
HELD_FIXED = ("chars2", "chars3", "chars4", "kana", "han", "hangul")
UPPERS, CAPS_TAIL = FAMILY_FEATURES.index("uppers"), FAMILY_FEATURES.index("caps_tail")


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fitting_draw(held: list[Sample]) -> list[Sample]:
    """Files of the same kinds as the bench's, none of the bench's own."""
    measured = {_key(s.text) for s in held}
    rng = random.Random(FIT_SEED)
    sp, node = site_packages(), node_global_modules()
    out: list[Sample] = []
    for source, roots, suffix, n in (
        ("python", sp, ".py", 300),
        ("javascript", node, ".js", 300),
        ("markdown", sp + node, ".md", 150),
        ("json", sp + node, ".json", 150),
    ):
        texts = [t for t in _read_texts(list(_walk(roots, (suffix,))), 2 * n, rng)]
        kept = [t for t in texts if _key(t) not in measured][:n]
        out += [Sample(source, ContentClass.CODE, t) for t in kept]
    return out


def _partitioned(text: str) -> np.ndarray:
    """FAMILY_FEATURES with uppers as capitals not after a capital (both parts non-negative)."""
    f = np.array(family_features(text), dtype=float)
    f[UPPERS] -= f[CAPS_TAIL]
    return f


def fit_code(family: str, samples: list[Sample]) -> tuple[float, ...]:
    counter = ClaudeCounter(family)
    rows = [(s, counter.count(s.text)) for s in samples if classify(s.text) is ContentClass.CODE]
    rows = [(s, t) for s, t in rows if t >= 20]
    sources = [s.source for s, _ in rows]
    per_source = {src: sources.count(src) for src in set(sources)}
    old = FAMILY_WEIGHTS[family][ContentClass.CODE]
    fixed = [FAMILY_FEATURES.index(n) for n in HELD_FIXED]
    free = [i for i in range(len(FAMILY_FEATURES)) if i not in fixed]
    a, b = [], []
    for s, truth in rows:
        f = _partitioned(s.text)
        weight = 1 / np.sqrt(per_source[s.source])
        rest = truth - sum(old[i] * f[i] for i in fixed)
        a.append(f[free] / truth * weight)
        b.append(rest / truth * weight)
    solved, _ = nnls(np.array(a), np.array(b))
    weights = list(old[: len(FAMILY_FEATURES)])
    for i, w in zip(free, solved, strict=True):
        weights[i] = round(float(w), 3)
    weights[CAPS_TAIL] = round(weights[CAPS_TAIL] - weights[UPPERS], 3)  # back to uppers + tail
    return (*weights, old[-1])


def _mape(family: str, samples: list[Sample]) -> float:
    counter = ClaudeCounter(family)
    errors = []
    for s in samples:
        truth = counter.count(s.text)
        if truth >= 20:
            errors.append(abs(family_estimate_tokens(s.text, family) - truth) / truth * 100)
    return statistics.fmean(errors)


def main() -> None:
    held = [s for s in gather_corpus(files_per_source=40) if s.text]
    fit = fitting_draw(held)
    print(f"fitted on {len(fit)} files, measured on {len(held)} (bench claude's draw)")
    for family in FAMILIES:
        print(family, "CODE", fit_code(family, fit))
    for family in (*FAMILIES, "claude-v4.8"):
        figures = []
        for source in ("python", "javascript", "json", "markdown", "log", "cjk", "base64"):
            figures.append(f"{source} {_mape(family, [s for s in held if s.source == source]):.2f}")
        print(family, "held out:", ", ".join(figures))


if __name__ == "__main__":
    main()
