"""Tier 1: a fast token estimate without a tokenizer, linear in the text's length.

The estimate counts the pieces a BPE pre-tokenizer cuts text into (words, digit groups, punctuation
runs, line breaks, indentation, non-ASCII characters) and weighs each piece by the tokens it costs in
o200k_base. Every feature is computed by C-level `bytes` operations (one UTF-8 encode, a few
`translate` passes and `count` calls); there is no per-character Python loop.

How the default weights were measured (bench/estimator.py gathers the same kinds of files):
  Corpus: 160 random *.py files of site-packages, 160 *.js of node's global node_modules (no
  TypeScript was installed), 160 *.json, 160 *.md, the CJK texts of the interpreter's test data,
  pip's own --log output, base64 and hex of slices of compiled extension modules: about 5.2 MB.
  Counted with o200k_base (encode_ordinary), then a non-negative least-squares fit of
  tokens ~ sum(weight * feature) minimising the relative error per file, each source weighted
  equally (one weight set for text, one for base64/hex). The fit used another random draw of files
  than the bench, which then scores it: mean absolute error per file python 4.1% (bytes/4: 13.1%),
  javascript 3.9% (7.9%), json 3.6% (25.5%), markdown 4.5% (8.2%), CJK 11% (11%), log 2.2% (37%),
  base64 6.0% (48.6%).
  Measured chars per token: python 4.3-4.4, javascript 3.9, markdown 3.9, json 2.4-2.7, log 2.5,
  base64 1.9, hex 2.4, CJK text 1.52 (~0.66 tokens per CJK character: o200k is far denser than
  the ~1.5 tokens per CJK character often quoted for older vocabularies).
  Weights for 2-byte (Latin/Cyrillic/Greek) and 4-byte (emoji) UTF-8 characters are assumptions:
  the installed files hold too little such text to measure them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tokend.core.types import ContentClass

# --------------------------------------------------------------------------- features


def _byte_table(rule: dict[str, range | bytes], default: int) -> bytes:
    table = bytearray([default] * 256)
    for symbol, members in rule.items():
        for b in members:
            table[b] = ord(symbol)
    return bytes(table)


_LOWER, _UPPER, _DIGITS = range(97, 123), range(65, 91), range(48, 58)
_PUNCT = bytes(b for b in range(33, 127) if not chr(b).isalnum())
# Every byte to one symbol: a=lower A=upper 0=digit .=punct ' '=space/tab/control n=line break
# c=UTF-8 continuation 2/3/4=lead byte of a 2/3/4-byte character (3: CJK, most symbols).
_SHAPE = _byte_table(
    {
        "a": _LOWER,
        "A": _UPPER,
        "0": _DIGITS,
        ".": _PUNCT,
        "n": b"\n\r",
        "c": range(0x80, 0xC0),
        "2": range(0xC0, 0xE0),
        "3": range(0xE0, 0xF0),
        "4": range(0xF0, 0x100),
    },
    ord(" "),
)
_LETTER_RUNS = _byte_table({"L": bytes(_LOWER) + bytes(_UPPER)}, ord("_"))
_DIGIT_RUNS = _byte_table({"D": _DIGITS}, ord("_"))
_PUNCT_RUNS = _byte_table({"P": _PUNCT}, ord("_"))
_UPPER_RUNS = _byte_table({"U": _UPPER}, ord("_"))
# The lead byte of a 3-byte UTF-8 character by script: E3 kana and CJK punctuation, E4-E9 Han
# ideographs, EA-ED Hangul syllables (and a few other blocks).
_SCRIPT = _byte_table({"J": b"\xe3", "H": range(0xE4, 0xEA), "K": range(0xEA, 0xEE)}, ord("_"))

FEATURES: tuple[str, ...] = (
    "words",  # runs of ASCII letters, plus camelCase humps (each is a pre-token)
    "letters",  # ASCII letters (long words split into several tokens)
    "digits",  # ASCII digits (o200k groups them by up to 3)
    "digit_runs",
    "punct",  # ASCII punctuation characters
    "punct_runs",
    "lines",  # line breaks
    "indents",  # lines that start with a space or tab
    "chars2",  # 2-byte UTF-8 characters (Latin accents, Greek, Cyrillic, ...)
    "chars3",  # 3-byte UTF-8 characters (CJK, kana, hangul, most symbols)
    "chars4",  # 4-byte UTF-8 characters (emoji, rare CJK)
    "uppers",  # ASCII capital letters (Claude's v4.7 vocabulary has few capitalised pieces)
    "upper_words",  # words that start with a capital (Claude writes a case marker before them)
    "kana",  # 3-byte characters led by E3 (kana, CJK punctuation): also counted in chars3
    "han",  # 3-byte characters led by E4-E9 (Han ideographs): also counted in chars3
    "hangul",  # 3-byte characters led by EA-ED (Hangul syllables): also counted in chars3
)


def text_features(text: str) -> tuple[int, ...]:
    """Counts of the FEATURES of `text` (characters and runs, not tokens). O(n), no Python loop."""
    raw = text.encode("utf-8", "surrogatepass")
    shape = raw.translate(_SHAPE)
    letters = raw.translate(_LETTER_RUNS)
    digits = raw.translate(_DIGIT_RUNS)
    punct = raw.translate(_PUNCT_RUNS)
    upper_runs = raw.translate(_UPPER_RUNS).count(b"_U") + (shape[:1] == b"A")
    starts_with = shape[:1]
    humps = shape.count(b"aA")
    script = raw.translate(_SCRIPT)
    return (
        letters.count(b"_L") + (starts_with in (b"a", b"A")) + humps,
        shape.count(b"a") + shape.count(b"A"),
        shape.count(b"0"),
        digits.count(b"_D") + (starts_with == b"0"),
        shape.count(b"."),
        punct.count(b"_P") + (starts_with == b"."),
        shape.count(b"n"),
        shape.count(b"n "),
        shape.count(b"2"),
        shape.count(b"3"),
        shape.count(b"4"),
        shape.count(b"A"),
        upper_runs - humps,
        script.count(b"J"),
        script.count(b"H"),
        script.count(b"K"),
    )


# --------------------------------------------------------------------------- weights

# Tokens (o200k_base) per unit of each feature, in FEATURES order; fitted as the module docstring says.
# chars2 and chars4 are assumed, not measured.
_TEXT_WEIGHTS: tuple[float, ...] = (
    0.757,
    0.031,
    0.1,
    1.333,
    0.316,
    0.441,
    0.945,
    0.491,
    0.5,
    0.807,
    1.5,
    *(0.0, 0.0, 0.0, 0.0, 0.0),
)
# base64 / hex: random-looking runs split into many short tokens (fitted on 64 base64 + 40 hex slices).
_BLOB_WEIGHTS: tuple[float, ...] = (
    *(1.346, 0.259, 0.313, 0.0, 0.0, 0.802, 1.013, 0.0, 0.5, 0.8, 1.5),
    *(0.0, 0.0, 0.0, 0.0, 0.0),
)

WEIGHTS: dict[ContentClass, tuple[float, ...]] = {
    ContentClass.PROSE: _TEXT_WEIGHTS,
    ContentClass.CODE: _TEXT_WEIGHTS,
    ContentClass.JSON: _TEXT_WEIGHTS,
    ContentClass.CJK: _TEXT_WEIGHTS,
    ContentClass.LOG: _TEXT_WEIGHTS,
    ContentClass.BLOB: _BLOB_WEIGHTS,
}

# Characters per o200k_base token of each class, measured on the fitting corpus (code = .py + .js).
# A calibrator that learned other ratios (another tokenizer, another user's mix) passes them to
# estimate_tokens; the estimate is then scaled by DEFAULT / learned: the per-piece weighting stays,
# only the level moves.
DEFAULT_CHARS_PER_TOKEN: dict[ContentClass, float] = {
    ContentClass.PROSE: 3.92,
    ContentClass.CODE: 4.28,
    ContentClass.JSON: 2.36,
    ContentClass.CJK: 1.52,
    ContentClass.BLOB: 2.10,
    ContentClass.LOG: 2.50,
}


# --------------------------------------------------------------------------- classification

_SAMPLE_CHARS = 2048  # classify looks at up to three windows of this many characters
_BLOB_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
_REPEAT_RUN = re.compile(r"(.)\1{3,}")  # a character repeated 4+ times
REPEAT_RUN_TOKENS_PER_CHAR = 0.164  # o200k tokens per character of such runs inside a blob
_LOG_LINE = re.compile(
    r"^\s*\[?(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\d\d:\d\d:\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d"
    r"|(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL)\b)",
    re.MULTILINE,
)
_CODE_LINE = re.compile(
    r"^[ \t]*(?:def |class |import |from \S+ import|return\b|if |for |while |elif |else\b|try:"
    r"|except\b|const |let |var |function\b|export |public |private |fn |func |package |#include"
    r"|@\w|[})\]];?,?$)|[;{]$|[=!]==? |\) ?(?:->|=>|\{)",
    re.MULTILINE,
)
_INDENTED_LINE = re.compile(r"^[ \t]+\S", re.MULTILINE)


def _sample(text: str) -> str:
    if len(text) <= 3 * _SAMPLE_CHARS:
        return text
    middle = len(text) // 2 - _SAMPLE_CHARS // 2
    return "\n".join(
        (text[:_SAMPLE_CHARS], text[middle : middle + _SAMPLE_CHARS], text[-_SAMPLE_CHARS:])
    )


def classify(text: str) -> ContentClass:
    """What `text` mostly is, judged from at most ~12k characters of it (cost independent of size)."""
    sample = _sample(text)
    n = len(sample)
    if n == 0:
        return ContentClass.PROSE
    non_ascii = n - len(sample.encode("ascii", "ignore"))
    if non_ascii > 0.25 * n:
        return ContentClass.CJK
    blob_chars = sum(map(len, _BLOB_RUN.findall(sample)))
    if blob_chars > 0.6 * n:
        return ContentClass.BLOB
    head = sample.lstrip()[:1]
    if head in ("{", "[") and sample.count('"') > 0.02 * n:
        return ContentClass.JSON
    lines = sample.count("\n") + 1
    if len(_LOG_LINE.findall(sample)) > 0.4 * lines:
        return ContentClass.LOG
    # Code: lines that look like statements, plus indentation (markdown rarely indents).
    # On 960 real .py/.js/.md files this split code from prose correctly 96.6% of the time.
    non_blank = max(1, lines - sample.count("\n\n"))
    code_score = len(_CODE_LINE.findall(sample)) + 0.5 * len(_INDENTED_LINE.findall(sample))
    if code_score > 0.45 * non_blank:
        return ContentClass.CODE
    return ContentClass.PROSE


# --------------------------------------------------------------------------- the estimate


def estimate_tokens(
    text: str,
    content_class: ContentClass | None = None,
    chars_per_token: Mapping[ContentClass, float] | None = None,
) -> int:
    """Estimated tokens of `text` (0 for "", >= 1 otherwise). O(len(text)).

    `content_class` skips classification when the caller knows it. `chars_per_token` holds learned
    characters-per-token ratios by class; a class missing from it (or a ratio <= 0) uses the default.
    """
    if not text:
        return 0
    klass = content_class or classify(text)
    weights = WEIGHTS[klass]
    repeated = 0
    if klass is ContentClass.BLOB:
        # Zero-filled binary encodes to runs like "AAAAAAAA", which o200k packs ~6 chars a token:
        # counted apart, the error on base64 of real binaries drops from ~28% to ~3.4% (measured
        # on 80 slices of installed extension modules, bench.estimator's base64 source).
        core = _REPEAT_RUN.sub("", text)
        repeated, text = len(text) - len(core), core
    tokens = sum(w * f for w, f in zip(weights, text_features(text), strict=True))
    tokens += repeated * REPEAT_RUN_TOKENS_PER_CHAR
    learned = chars_per_token.get(klass) if chars_per_token else None
    if learned is not None and learned > 0:
        tokens *= DEFAULT_CHARS_PER_TOKEN[klass] / learned
    return max(1, round(tokens))


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """TokenCounter of tier 1: no vocabulary, never exact. Optional learned ratios by class."""

    chars_per_token: Mapping[ContentClass, float] | None = None

    @property
    def name(self) -> str:
        return "estimate"

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        """Estimated tokens of `text`."""
        return estimate_tokens(text, chars_per_token=self.chars_per_token)

    def count_as(self, text: str, content_class: ContentClass | None) -> int:
        """Estimated tokens when the class is known from context (e.g. a tool call is JSON)."""
        return estimate_tokens(text, content_class, self.chars_per_token)
