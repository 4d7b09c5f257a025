"""Counting for one model: exact where a tokenizer exists, else the calibrated estimate.

Every part's count is cached on the part in the store, and every text by its content hash,
so nothing is tokenized twice, also across restarts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tokend.adapters.tokenizers import counter_for
from tokend.core.calibration import Calibrator
from tokend.core.catalog import ModelInfo
from tokend.core.estimate import EstimateCounter, classify, image_tokens
from tokend.core.framing import message_overhead
from tokend.core.ports import CountCache, TokenCounter
from tokend.core.render import PRUNED_TOOL_RESULT, part_content_hint, part_text
from tokend.core.types import ContentClass, ImagePart, Part, Role, StoredPart


@dataclass(frozen=True)
class PartCounts:
    tokens: list[int]  # one per part
    framing: int  # per-message overhead
    chars_by_class: Counter[ContentClass]

    @property
    def total(self) -> int:
        return sum(self.tokens) + self.framing


class ModelCounter:
    """Counts parts and texts the way `model` sees them."""

    def __init__(self, model: ModelInfo, cache: CountCache | None, calibrator: Calibrator) -> None:
        self.model = model
        self._calibrator = calibrator
        self._exact: TokenCounter | None = (
            counter_for(model.tokenizer, cache=cache) if model.tokenizer else None
        )

    @property
    def exact(self) -> bool:
        return self._exact is not None

    def _counter(self) -> TokenCounter:
        if self._exact is not None:
            return self._exact
        return EstimateCounter(chars_per_token=self._calibrator.ratios(self.model.name))

    def count_text(self, text: str) -> int:
        return self._counter().count(text) if text else 0

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        counter = self._counter()
        many = getattr(counter, "count_many", None)
        if many is not None:
            return list(many(texts))
        return [counter.count(t) if t else 0 for t in texts]

    def count_parts(self, role: Role, parts: Sequence[Part]) -> PartCounts:
        texts = [part_text(p) for p in parts]
        tokens = self.count_texts(texts)
        chars: Counter[ContentClass] = Counter()
        for i, (part, text) in enumerate(zip(parts, texts, strict=True)):
            if isinstance(part, ImagePart):
                tokens[i] = image_tokens(self.model.provider)
                continue
            if text:
                chars[part_content_hint(part) or classify(text)] += len(text)
        return PartCounts(tokens, message_overhead(role, self.model.provider), chars)

    def pruned_tokens(self) -> int:
        return self.count_text(PRUNED_TOOL_RESULT)

    def stored_total(self, role: Role, parts: Sequence[StoredPart]) -> int:
        """Tokens of a stored message, using cached part counts and pruned markers."""
        pruned = None
        total = message_overhead(role, self.model.provider)
        for sp in parts:
            if sp.compacted_at is not None:
                pruned = self.pruned_tokens() if pruned is None else pruned
                total += pruned
            elif sp.tokens is not None:
                total += sp.tokens
            else:
                total += self.count_parts(role, [sp.part]).tokens[0]
        return total
