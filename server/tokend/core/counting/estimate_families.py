"""The cold estimate in Claude's tokens: per-family weights of FAMILY_FEATURES (core.counting.estimate's
FEATURES and `caps_tail`).

For each Claude tokenizer family and content class, tokens per unit of each feature
(FAMILY_FEATURES order), then tokens per character of a repeated run inside a blob. Fitted by
non-negative least squares of the relative error against ctok's exact counts (adapters.claude_fast, identical to
ctok) on 299 files of bench/estimator.py's corpus (seed 7, 60 a source: another draw than the
bench scores, except the CJK texts, of which the interpreter has only nine), each source weighted
equally, the files grouped by the class `classify` gives them. Fixed, not fitted (too little such
text): 1.0 per 2-byte and 2.0 per 4-byte character. The 3-byte characters are fitted on the CJK
files per script (kana and CJK punctuation, Han, Hangul) and shared by every class. The case
features carry what the o200k-shaped estimate missed: v4.7 writes a case marker before each
capitalised word and has few capitalised pieces. v4.8 is v4.7's vocabulary.

Fit error (mean absolute % per file, on the fitting draw): v3 prose 2.3, code 3.2, json 1.9,
CJK 8.3, blob 2.5, log 2.5; v4.7 prose 3.2, code 3.8, json 2.1, CJK 7.7, blob 0.6, log 2.5.

The CODE weights were fitted again with one more feature, `caps_tail` (bench/claude_fit.py, which
says how): on 896 files disjoint from those bench/claude.py measures (300 *.py, 300 *.js, 150 *.md,
150 *.json of site-packages and node's modules, seed 99, less the bench's own), with the weights
of characters above ASCII held. Measured on the bench's held-out draw: Python 4.4% for each family
(4.9 v3, 5.5 v4.7 and v4.8 before), JavaScript 2.8 v3 / 3.3 v4.7 (3.6, 4.0).
"""

from __future__ import annotations

from collections.abc import Mapping

from tokend.core.counting.estimate import (
    _REPEAT_RUN,
    FEATURES,
    _byte_table,
    classify,
    text_features,
)
from tokend.core.types import ContentClass

FAMILY_FEATURES: tuple[str, ...] = (
    *FEATURES,
    "caps_tail",  # capitals right after a capital: v4.7 writes an all-capitals word as a marker
    # and its lower case, v3 has pieces for runs of capitals; alone, "uppers" priced each capital
    # of GOOGLESQL_BUILTINS as a capitalised word's (+33%)
)
_CAPS_RUNS = _byte_table({"U": range(65, 91)}, ord("_"))


def family_features(text: str) -> tuple[int, ...]:
    """Counts of FAMILY_FEATURES of `text`: core.counting.estimate's, then capitals after a capital."""
    features = text_features(text)
    runs = text.encode("utf-8", "surrogatepass").translate(_CAPS_RUNS)
    starts = runs.count(b"_U") + (runs[:1] == b"U")
    return (*features, features[FEATURES.index("uppers")] - starts)


# fmt: off
FAMILY_WEIGHTS: dict[str, dict[ContentClass, tuple[float, ...]]] = {
    "claude-v3": {
        ContentClass.PROSE: (
            *(0.816, 0.029, 0.289, 0.774, 0.0, 1.436, 0.309, 2.551),
            *(1.0, 0.847, 2.0, 0.023, 0.094, 0.0, 0.322, 0.683),
            0.0, 0.0,
        ),
        ContentClass.CODE: (
            *(0.606, 0.087, 0.154, 1.419, 0.203, 0.929, 0.0, 1.839),
            *(1.0, 0.847, 2.0, 0.454, 0.0, 0.0, 0.322, 0.683),
            -0.454, 0.0,
        ),
        ContentClass.JSON: (
            *(0.333, 0.166, 0.0, 0.801, 0.479, 0.516, 0.0, 1.693),
            *(1.0, 0.847, 2.0, 0.338, 0.0, 0.0, 0.322, 0.683),
            0.0, 0.0,
        ),
        ContentClass.CJK: (
            *(0.816, 0.029, 0.289, 0.774, 0.0, 1.436, 0.309, 2.551),
            *(1.0, 0.847, 2.0, 0.023, 0.095, 0.0, 0.322, 0.683),
            0.0, 0.0,
        ),
        ContentClass.BLOB: (
            *(0.889, 0.0, 1.678, 0.0, 0.088, 0.0, 4.623, 0.0),
            *(1.0, 0.847, 2.0, 0.728, 0.0, 0.0, 0.322, 0.683),
            0.0, 0.282,
        ),
        ContentClass.LOG: (
            *(1.448, 0.0, 0.0, 2.013, 0.398, 0.019, 0.0, 0.0),
            *(1.0, 0.847, 2.0, 0.0, 0.0, 0.0, 0.322, 0.683),
            0.0, 0.0,
        ),
    },
    "claude-v4.7": {
        ContentClass.PROSE: (
            *(0.48, 0.172, 0.251, 0.616, 0.07, 1.592, 0.275, 3.391),
            *(1.0, 0.841, 2.0, 0.409, 0.539, 0.0, 0.299, 0.676),
            0.0, 0.0,
        ),
        ContentClass.CODE: (
            *(0.302, 0.212, 0.035, 1.541, 0.389, 0.874, 0.0, 2.085),
            *(1.0, 0.841, 2.0, 1.302, 0.0, 0.0, 0.299, 0.676),
            -1.173, 0.0,
        ),
        ContentClass.JSON: (
            *(0.0, 0.33, 0.0, 0.948, 0.708, 0.32, 0.0, 1.621),
            *(1.0, 0.841, 2.0, 0.573, 0.0, 0.0, 0.299, 0.676),
            0.0, 0.0,
        ),
        ContentClass.CJK: (
            *(0.48, 0.172, 0.251, 0.616, 0.07, 1.592, 0.275, 3.391),
            *(1.0, 0.841, 2.0, 0.409, 0.539, 0.0, 0.299, 0.676),
            0.0, 0.0,
        ),
        ContentClass.BLOB: (
            *(0.832, 0.262, 1.498, 0.0, 0.0, 0.778, 0.681, 0.0),
            *(1.0, 0.841, 2.0, 0.535, 0.0, 0.0, 0.299, 0.676),
            0.0, 0.992,
        ),
        ContentClass.LOG: (
            *(0.559, 0.106, 0.0, 0.647, 0.593, 1.655, 0.0, 0.0),
            *(1.0, 0.841, 2.0, 0.321, 0.0, 0.0, 0.299, 0.676),
            0.0, 0.0,
        ),
    },
}
# fmt: on
FAMILY_WEIGHTS["claude-v4.8"] = FAMILY_WEIGHTS["claude-v4.7"]


# Characters per token of each class for Claude's tokenizer families: the ratios at which a
# family's own estimate (family_estimate_tokens) stands as it is; the
# calibrator starts a Claude model from them and scales the estimate by ratio / learned as it
# learns. (First fitted as medians over files of DEFAULT * o200k-shaped estimate / ctok's exact
# count on 300 files of bench/estimator.py's corpus: seed 7, 60 a source.)
FAMILY_CHARS_PER_TOKEN: dict[str, dict[ContentClass, float]] = {
    "claude-v3": {
        ContentClass.PROSE: 3.30,
        ContentClass.CODE: 3.44,
        ContentClass.JSON: 1.92,
        ContentClass.CJK: 1.08,
        ContentClass.BLOB: 1.44,
        ContentClass.LOG: 2.25,
    },
    "claude-v4.7": {
        ContentClass.PROSE: 2.46,
        ContentClass.CODE: 2.67,
        ContentClass.JSON: 1.63,
        ContentClass.CJK: 1.06,
        ContentClass.BLOB: 0.80,
        ContentClass.LOG: 1.83,
    },
}
FAMILY_CHARS_PER_TOKEN["claude-v4.8"] = FAMILY_CHARS_PER_TOKEN["claude-v4.7"]


def family_chars_per_token(tokenizer: str | None) -> Mapping[ContentClass, float] | None:
    """The estimate's chars-per-token priors for a tokenizer family (None: o200k's defaults)."""
    return FAMILY_CHARS_PER_TOKEN.get(tokenizer or "")


def family_estimate_tokens(
    text: str,
    family: str,
    content_class: ContentClass | None = None,
    chars_per_token: Mapping[ContentClass, float] | None = None,
) -> int:
    """Estimated tokens of `text` in a Claude family's tokens (0 for "", >= 1 otherwise), with
    that family's weights; its FAMILY_CHARS_PER_TOKEN are the ratios that leave the estimate as
    it is, and learned `chars_per_token` scale it from there (as core.counting.estimate.estimate_tokens)."""
    if not text:
        return 0
    klass = content_class or classify(text)
    weights = FAMILY_WEIGHTS[family][klass]
    base = FAMILY_CHARS_PER_TOKEN[family]
    repeated = 0
    if klass is ContentClass.BLOB:
        core = _REPEAT_RUN.sub("", text)
        repeated, text = len(text) - len(core), core
    tokens = sum(w * f for w, f in zip(weights, family_features(text), strict=False))
    tokens += repeated * weights[-1]
    learned = chars_per_token.get(klass) if chars_per_token else None
    if learned is not None and learned > 0:
        tokens *= base[klass] / learned
    return max(1, round(tokens))
