"""What the estimates learn from providers' figures: each sample a change brings (a reply's
reported input tokens against the estimate of what it was sent) moves the model's calibration
(core.counting.calibration), which is saved in the store."""

from __future__ import annotations

from tokend.core.counting.calibration import Calibrator
from tokend.core.counting.estimate import DEFAULT_CHARS_PER_TOKEN
from tokend.core.ports import StoredCalibration
from tokend.core.session.evolve import Evolved
from tokend.service.counting.counter import ModelCounter


class Calibration:
    def __init__(self, stored: StoredCalibration) -> None:
        self._stored = stored
        self.calibrator = Calibrator.from_state(stored.load_calibration(), DEFAULT_CHARS_PER_TOKEN)

    def learn(self, model: str, counter: ModelCounter, evolved: Evolved) -> bool:
        """Learn from the samples of `evolved` (none for a model counted exactly); whether
        there were any, to be saved."""
        if not evolved.samples or counter.exact:
            return False
        for sample in evolved.samples:
            self.calibrator.observe(
                model, sample.chars_by_class, sample.estimated_tokens, sample.actual_tokens
            )
        return True

    def save(self) -> None:
        self._stored.save_calibration(self.calibrator.to_state())
