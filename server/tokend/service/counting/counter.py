"""Counting for one model: exact where a tokenizer exists, else the calibrated estimate.

The estimate is the one `tokend replay` is measured with: the estimator's per-class weights,
the chars-per-token ratios the calibrator learnt for the model, times the model's learnt
correction. Every part's count is cached on the part in the store, and every text by its
content hash, so nothing is tokenized twice, also across restarts. Only parts the session's
wire format sends count (see core.assembly.wire_formats.part_is_sent).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping, Sequence

from tokend.core.assembly.wire_formats import WireFormat, default_format, part_is_sent
from tokend.core.counting.calibration import Calibrator
from tokend.core.counting.estimate import classify, estimate_tokens
from tokend.core.counting.estimate_families import family_chars_per_token, family_estimate_tokens
from tokend.core.counting.framing import message_overhead
from tokend.core.counting.media_tokens import image_tokens
from tokend.core.counting.render import PRUNED_TOOL_RESULT, part_content_hint, part_text
from tokend.core.models.catalog import ModelInfo
from tokend.core.models.names import CLAUDE_FAMILIES, claude_family, is_claude
from tokend.core.ports import CountCache, TokenCounter
from tokend.core.session.changes import PartCounts
from tokend.core.text_chunks import CHUNK_CHARS, count_chunks
from tokend.core.types import ContentClass, ImagePart, Part, ReasoningPart, Role, StoredPart
from tokend.service.ports import ExactCounters, KeptCounter

log = logging.getLogger(__name__)

_told: set[str] = set()  # models whose fallback to the estimate was logged (once per process)
_told_lock = threading.Lock()


def _say_once(model: str, message: str) -> None:
    with _told_lock:
        if model in _told:
            return
        _told.add(model)
    log.warning(message)


def exact_counter(
    model: ModelInfo, cache: CountCache | None, tokenizers: ExactCounters
) -> KeptCounter | None:
    """The exact counter of `model`'s tokenizer; None (the estimate) when it has none. A Claude
    model whose tokenizer family is unknown, or a Claude family without ctok installed, falls back
    to the estimate and says so once."""
    tokenizer = model.tokenizer
    if tokenizer in CLAUDE_FAMILIES and not tokenizers.has_claude_families():
        _say_once(
            model.name,
            f"{model.name}: counted by the estimate: the {tokenizer} tokenizer needs the ctok "
            "package (installed with tokend on Python 3.12+; on 3.11: pip install --no-deps "
            "--ignore-requires-python ctok)",
        )
        return None
    if tokenizer is None:
        if is_claude(model.name) and claude_family(model.name) is None:  # not `tokenizer = ""`
            families = ", ".join(CLAUDE_FAMILIES)
            _say_once(
                model.name,
                f"{model.name}: no known Claude tokenizer family, counted by the estimate; "
                f'set [models."{model.name}"] tokenizer to one of {families} to count it exactly',
            )
        return None
    return tokenizers.counter(tokenizer, cache)


class ModelCounter:
    """Counts parts and texts the way `model` sees them (thread-safe: workers count too)."""

    def __init__(
        self,
        model: ModelInfo,
        cache: CountCache | None,
        calibrator: Calibrator,
        *,
        tokenizers: ExactCounters,
    ) -> None:
        self.model = model
        self.format: WireFormat = default_format(model.provider)
        self._calibrator = calibrator
        self._tokenizers = tokenizers
        self._exact: KeptCounter | None = exact_counter(model, cache, tokenizers)
        family_priors = family_chars_per_token(model.tokenizer)
        self._family = model.tokenizer if family_priors is not None else None
        if family_priors is not None:  # estimated in the family's tokens (also estimate_first)
            calibrator.use_priors(model.name, family_priors)

    @property
    def exact(self) -> bool:
        return self._exact is not None

    @property
    def slow_exact(self) -> bool:
        """Counted exactly by a Claude family (ctok's rules: ~1 s per MB, not tiktoken's ~20x
        faster): a big text is worth estimating first."""
        return self._exact is not None and self._family is not None

    def uncached(self) -> TokenCounter | None:
        """The model's exact counter without the persistent count cache (None: estimated)."""
        return exact_counter(self.model, None, self._tokenizers) if self.exact else None

    def estimate_first(self) -> ModelCounter:
        """This model's counter by its family's estimate alone: a big text's first figure while
        its exact count runs (service.session.count_upgrade)."""
        twin = copy.copy(self)
        twin._exact = None
        return twin

    def count_text(self, text: str) -> int:
        return self.count_texts([text])[0]

    def _estimate(
        self, text: str, cls: ContentClass | None, ratios: Mapping[ContentClass, float]
    ) -> int:
        """The estimate in the model's Claude family's tokens when it has one, else o200k's."""
        if self._family is not None:
            return family_estimate_tokens(text, self._family, cls, ratios)
        return estimate_tokens(text, cls, ratios)

    def count_long(self, text: str, stop_above: int | None = None) -> tuple[int, bool]:
        """(tokens of a long text, whole?): counted piece by piece (the exact counter's parts,
        else core.text_chunks'), so no single call holds the interpreter for long, stopping
        once `stop_above` is passed (then the count is a lower bound and `whole` is False)."""
        total = 0
        pieces = getattr(self._exact, "count_pieces", None)
        counts = pieces(text) if pieces is not None else map(self.count_text, count_chunks(text))
        for tokens in counts:
            total += tokens
            if stop_above is not None and total > stop_above:
                return total, False
        return total, True

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        if self._exact is None:
            ratios = self._calibrator.ratios(self.model.name)
            factor = self._calibrator.correction(self.model.name)
            return [_corrected(self._estimate(t, None, ratios), factor) if t else 0 for t in texts]
        many = getattr(self._exact, "count_many", None)
        if many is not None:
            return list(many(texts))
        return [self._exact.count(t) if t else 0 for t in texts]

    def count_parts(
        self,
        role: Role,
        parts: Sequence[Part],
        known: Sequence[int | None] | None = None,
        *,
        for_learning: bool = True,
        stop_above: int | None = None,
    ) -> PartCounts:
        """Counts of a message's parts; `known` holds counts already cached per part (None:
        count it). Without `for_learning`, known parts are not estimated again for raw_text. With
        `stop_above`, exact counting may stop once the message is known to exceed it (the
        counts are then lower bounds: `partial`)."""
        texts = [part_text(p) for p in parts]
        sent = tuple(part_is_sent(p, role, self.format) for p in parts)
        classes = [
            (part_content_hint(p) or classify(t)) if t and s else None
            for p, t, s in zip(parts, texts, sent, strict=True)
        ]
        tokens: list[int | None] = list(known) if known is not None else [None] * len(parts)
        raw_text = 0.0
        partial = False
        if self._exact is None:
            raw_text = self._estimate_parts(texts, classes, sent, tokens, for_learning)
        else:
            partial = not self._count_exact_parts(texts, tokens, stop_above)
        fixed = 0
        chars: dict[ContentClass, int] = {}
        for i, part in enumerate(parts):
            if isinstance(part, ImagePart):
                tokens[i] = image_tokens(self.model.provider)
                fixed += image_tokens(self.model.provider) if sent[i] else 0
            elif classes[i] is not None:
                cls = classes[i]
                assert cls is not None
                chars[cls] = chars.get(cls, 0) + len(texts[i])
        return PartCounts(
            tokens=tuple(int(t or 0) for t in tokens),
            sent=sent,
            framing=message_overhead(role, self.model.provider),
            fixed=fixed,
            raw_text=raw_text,
            chars_by_class=chars,
            has_reasoning=any(isinstance(p, ReasoningPart) for p in parts),
            partial=partial,
        )

    def _estimate_parts(
        self,
        texts: Sequence[str],
        classes: Sequence[ContentClass | None],
        sent: Sequence[bool],
        tokens: list[int | None],
        for_learning: bool,
    ) -> float:
        """Fills the parts' estimated counts into `tokens` (those still None); returns the raw
        estimate of the sent texts (raw_text: what the calibrator learns from)."""
        ratios = self._calibrator.ratios(self.model.name)
        factor = self._calibrator.correction(self.model.name)
        raw_text = 0.0
        for i, (text, cls) in enumerate(zip(texts, classes, strict=True)):
            if not text:
                tokens[i] = 0 if tokens[i] is None else tokens[i]
                continue
            if tokens[i] is not None and not for_learning:
                continue
            raw = self._estimate(text, cls, ratios)
            if sent[i]:
                raw_text += raw
            if tokens[i] is None:
                tokens[i] = _corrected(raw, factor)
        return raw_text

    def _count_exact_parts(
        self, texts: Sequence[str], tokens: list[int | None], stop_above: int | None
    ) -> bool:
        """Fills the parts' exact counts into `tokens` (those still None): the short texts in
        one batch, the long ones piece by piece; False once `stop_above` is passed (the counts
        are then lower bounds)."""
        todo = [i for i, t in enumerate(tokens) if t is None]
        short = [i for i in todo if len(texts[i]) <= CHUNK_CHARS]
        for i, n in zip(short, self.count_texts([texts[i] for i in short]), strict=True):
            tokens[i] = n
        counted = sum(t for t in tokens if t is not None)
        for i in (i for i in todo if len(texts[i]) > CHUNK_CHARS):
            room = None if stop_above is None else stop_above - counted
            tokens[i], whole = self.count_long(texts[i], room)
            counted += tokens[i] or 0
            if not whole:
                return False
        return True

    def pruned_tokens(self) -> int:
        return self.count_kept([PRUNED_TOOL_RESULT])[0]

    def count_kept(self, texts: Sequence[str]) -> list[int]:
        """As count_texts, the exact counts kept in the store whatever the texts' length: for
        what every request repeats (a system prompt, the pruned placeholder), so that the first
        assembly after a restart finds them there and waits for no vocabulary."""
        if self._exact is not None:
            return self._exact.count_many(texts, kept=True)
        return self.count_texts(texts)

    def stored_counts(
        self, role: Role, parts: Sequence[StoredPart], *, for_learning: bool = False
    ) -> PartCounts:
        """Counts of a stored message as it is sent now: cached part counts, placeholders for
        pruned results, fresh counts for parts the store has none for."""
        pruned = self.pruned_tokens() if any(sp.compacted_at for sp in parts) else 0
        known = [pruned if sp.compacted_at is not None else sp.tokens for sp in parts]
        return self.count_parts(role, [sp.part for sp in parts], known, for_learning=for_learning)


def _corrected(raw: int, factor: float) -> int:
    return max(1, round(raw * factor)) if raw else 0
