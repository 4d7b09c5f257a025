"""Calibrated estimation (tier 3): chars -> tokens ratios learnt per (model, content class) from the
token counts providers report, plus a per-model overall correction factor.

Units: ratios are chars per token (what `core.counting.estimate.estimate_tokens(chars_per_token=...)` takes);
the correction factor multiplies an estimate in tokens (actual / estimated).

Learning is a bounded moving average, so one odd sample cannot swing it:
- an observed ratio is clamped to [MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN] first;
- its weight is at most MAX_WEIGHT, less for small samples (scaled by chars / FULL_WEIGHT_CHARS);
- one update moves a ratio by at most MAX_STEP (relative);
- samples under MIN_LEARN_TOKENS are ignored (there, a few tokens of framing or a hidden reminder
  the client injected dominate the delta).
Attribution: a delta between two provider calls usually mixes classes. A class ratio learns only from
deltas where one class holds >= SINGLE_CLASS_SHARE of the chars (and >= MIN_LEARN_CHARS chars); the
overall correction learns from every delta the error the class ratios leave unexplained, each sample
counted as at most CORRECTION_SAMPLE_BOUND times off the current factor.
The constants were chosen on a real 150-call Claude Code session (bench/replay.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from tokend.core.types import ContentClass

MIN_CHARS_PER_TOKEN = 1.0
MAX_CHARS_PER_TOKEN = 8.0
MIN_CORRECTION = 0.5
MAX_CORRECTION = 2.0
MAX_WEIGHT = 0.2
CORRECTION_WEIGHT = 0.2
CORRECTION_SAMPLE_BOUND = 1.3  # one sample counts as at most 1.3x off the current factor
MAX_STEP = 0.1
FULL_WEIGHT_CHARS = 4000
MIN_LEARN_CHARS = 200
MIN_LEARN_TOKENS = 150
SINGLE_CLASS_SHARE = 0.9
NEUTRAL_CHARS_PER_TOKEN = 4.0  # starting point for a class without prior nor sample
IMPLAUSIBLE_FACTOR = 20.0  # a sample this far off its estimate (either way) is not learnt
STATE_VERSION = 1


@dataclass(slots=True)
class _ModelCalibration:
    ratios: dict[ContentClass, float] = field(default_factory=dict)
    class_samples: dict[ContentClass, int] = field(default_factory=dict)
    correction: float = 1.0
    samples: int = 0


def _clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _moved(old: float, observed: float, weight: float) -> float:
    """old moved toward observed by `weight`, never more than MAX_STEP relative in one step."""
    target = old + weight * (observed - old)
    return _clamp(target, old * (1 - MAX_STEP), old * (1 + MAX_STEP))


class Calibrator:
    """Learns chars/token per (model, ContentClass) and a per-model correction from actual counts.

    `priors` (chars per token by class) are the starting ratios, e.g. the estimator's defaults;
    `use_priors` gives one model its own (its tokenizer family's); `ratios(model)` returns the
    priors overlaid with the model's own, then with what was learnt for that model.
    """

    def __init__(self, priors: Mapping[ContentClass, float] | None = None) -> None:
        self._priors = {
            ContentClass(key): _clamp(float(value), MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN)
            for key, value in (priors or {}).items()
        }
        self._models: dict[str, _ModelCalibration] = {}
        self._model_priors: dict[str, dict[ContentClass, float]] = {}

    def use_priors(self, model: str, priors: Mapping[ContentClass, float]) -> None:
        """Start `model` from these ratios instead of the shared priors (its tokenizer family's,
        core.counting.estimate_families.FAMILY_CHARS_PER_TOKEN). They are not part of `to_state`: whoever builds the
        model's counter sets them again."""
        self._model_priors[model] = {ContentClass(k): float(v) for k, v in priors.items()}

    def observe(
        self,
        model: str,
        added_chars_by_class: Mapping[ContentClass, int],
        estimated_tokens: float,
        actual_tokens: float,
    ) -> bool:
        """Learn from one sample: text of `added_chars_by_class` was estimated at `estimated_tokens`
        (with `ratios(model)`, before `correction`) and really cost `actual_tokens`.
        Samples with fewer than MIN_LEARN_TOKENS actual or estimated tokens, or more than
        IMPLAUSIBLE_FACTOR off the estimate, are not learnt. Returns whether it learnt."""
        if not (math.isfinite(estimated_tokens) and math.isfinite(actual_tokens)):
            return False
        if actual_tokens < MIN_LEARN_TOKENS or estimated_tokens < MIN_LEARN_TOKENS:
            return False
        off = actual_tokens / estimated_tokens
        if not 1 / IMPLAUSIBLE_FACTOR <= off <= IMPLAUSIBLE_FACTOR:
            # No text is 20x denser or sparser than its class's estimate: the figures describe
            # something else (a miscounted usage). Real sessions do have samples 6-20x off
            # (context a client injects unseen), and learning from them, bounded, helps: the
            # 2.7 MB session's replay p90 is 0.515% with them, 0.519% without.
            return False
        state = self._models.setdefault(model, _ModelCalibration())
        state.samples += 1
        total_chars = sum(max(0, chars) for chars in added_chars_by_class.values())
        weight = MAX_WEIGHT * min(1.0, total_chars / FULL_WEIGHT_CHARS)
        explained = estimated_tokens
        if total_chars >= MIN_LEARN_CHARS:
            content_class, chars = max(added_chars_by_class.items(), key=lambda item: item[1])
            share = chars / total_chars
            if share >= SINGLE_CLASS_SHARE:
                content_class = ContentClass(content_class)
                old = self._ratio(model, state, content_class)
                # The estimate scales as 1 / ratio, so the ratio that would have hit the actual
                # count is old * estimated / actual (= chars / actual for a plain chars/ratio).
                observed_ratio = _clamp(
                    old * estimated_tokens / actual_tokens, MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN
                )
                new = _clamp(
                    _moved(old, observed_ratio, weight), MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN
                )
                state.ratios[content_class] = new
                state.class_samples[content_class] = state.class_samples.get(content_class, 0) + 1
                # What the estimate would have been with the updated ratio.
                explained = estimated_tokens * (share * old / new + (1 - share))
        # The overall factor learns the error the class ratios do not explain.
        observed_correction = _clamp(
            actual_tokens / explained,
            state.correction / CORRECTION_SAMPLE_BOUND,
            state.correction * CORRECTION_SAMPLE_BOUND,
        )
        correction_weight = CORRECTION_WEIGHT * min(1.0, total_chars / FULL_WEIGHT_CHARS)
        state.correction = _clamp(
            _moved(state.correction, observed_correction, correction_weight),
            MIN_CORRECTION,
            MAX_CORRECTION,
        )
        return True

    def ratios(self, model: str) -> dict[ContentClass, float]:
        """Chars per token by class for `model`: learnt values over the priors."""
        learnt = self._models.get(model)
        merged = dict(self._priors)
        merged.update(self._model_priors.get(model, {}))
        if learnt is not None:
            merged.update(learnt.ratios)
        return merged

    def correction(self, model: str) -> float:
        """Multiplier for a token estimate made with `ratios(model)` (1.0 before any sample)."""
        learnt = self._models.get(model)
        return learnt.correction if learnt is not None else 1.0

    def samples(self, model: str) -> int:
        learnt = self._models.get(model)
        return learnt.samples if learnt is not None else 0

    def _ratio(self, model: str, state: _ModelCalibration, content_class: ContentClass) -> float:
        if content_class in state.ratios:
            return state.ratios[content_class]
        own = self._model_priors.get(model, {})
        return own.get(content_class, self._priors.get(content_class, NEUTRAL_CHARS_PER_TOKEN))

    def to_state(self) -> dict[str, Any]:
        """A JSON-safe snapshot of what was learnt (priors are not part of it)."""
        return {
            "version": STATE_VERSION,
            "models": {
                model: {
                    "ratios": {str(key): value for key, value in learnt.ratios.items()},
                    "classSamples": {str(key): n for key, n in learnt.class_samples.items()},
                    "correction": learnt.correction,
                    "samples": learnt.samples,
                }
                for model, learnt in self._models.items()
            },
        }

    @classmethod
    def from_state(
        cls, state: Mapping[str, Any], priors: Mapping[ContentClass, float] | None = None
    ) -> Calibrator:
        """Rebuild from `to_state()` output. Unknown classes, wrong types and out-of-range values
        are dropped or clamped: a damaged state degrades to the priors, it never raises."""
        calibrator = cls(priors)
        models = state.get("models") if isinstance(state, Mapping) else None
        if not isinstance(models, Mapping):
            return calibrator
        for model, raw in models.items():
            if isinstance(model, str) and isinstance(raw, Mapping):
                calibrator._models[model] = _model_from_state(raw)
        return calibrator


def _model_from_state(raw: Mapping[str, Any]) -> _ModelCalibration:
    learnt = _ModelCalibration()
    ratios = raw.get("ratios")
    for key, value in ratios.items() if isinstance(ratios, Mapping) else ():
        content_class = _content_class(key)
        if content_class is not None and _is_number(value):
            learnt.ratios[content_class] = _clamp(value, MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN)
    counts = raw.get("classSamples")
    for key, value in counts.items() if isinstance(counts, Mapping) else ():
        content_class = _content_class(key)
        if content_class is not None and isinstance(value, int) and value >= 0:
            learnt.class_samples[content_class] = value
    correction = raw.get("correction")
    if _is_number(correction):
        learnt.correction = _clamp(correction, MIN_CORRECTION, MAX_CORRECTION)
    samples = raw.get("samples")
    if isinstance(samples, int) and not isinstance(samples, bool) and samples >= 0:
        learnt.samples = samples
    return learnt


def _content_class(key: Any) -> ContentClass | None:
    try:
        return ContentClass(key)
    except ValueError:
        return None


def _is_number(value: Any) -> TypeGuard[float]:
    """A finite int or float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
