"""The calibrator: bounded, convergent, robust to outliers, persistable."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.counting.calibration import (
    MAX_CHARS_PER_TOKEN,
    MAX_CORRECTION,
    MIN_CHARS_PER_TOKEN,
    MIN_CORRECTION,
    Calibrator,
)
from tokend.core.types import ContentClass

MODEL = "claude-opus-4-6"
PRIORS = {ContentClass.PROSE: 4.0, ContentClass.CODE: 3.5, ContentClass.JSON: 3.0}

classes = st.sampled_from(list(ContentClass))
samples = st.tuples(
    st.dictionaries(classes, st.integers(min_value=0, max_value=200_000), max_size=3),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
)


def _plain_estimate(calibrator: Calibrator, content_class: ContentClass, chars: int) -> float:
    """What an estimator using the calibrator's ratios (chars / ratio) would say."""
    return chars / calibrator.ratios(MODEL)[content_class]


@given(st.lists(samples, max_size=60))
def test_ratios_and_correction_stay_within_bounds(observations) -> None:
    calibrator = Calibrator(PRIORS)

    for chars_by_class, estimated, actual in observations:
        calibrator.observe(MODEL, chars_by_class, estimated, actual)

    for ratio in calibrator.ratios(MODEL).values():
        assert MIN_CHARS_PER_TOKEN <= ratio <= MAX_CHARS_PER_TOKEN
    assert MIN_CORRECTION <= calibrator.correction(MODEL) <= MAX_CORRECTION


@settings(max_examples=50)
@given(
    true_ratio=st.floats(min_value=1.5, max_value=7.0),
    chars=st.integers(min_value=2_000, max_value=50_000),
    content_class=st.sampled_from([ContentClass.PROSE, ContentClass.CODE, ContentClass.JSON]),
)
def test_converges_toward_a_constant_true_ratio(true_ratio, chars, content_class) -> None:
    calibrator = Calibrator(PRIORS)
    start_error = abs(PRIORS[content_class] - true_ratio)

    for _ in range(60):
        estimated = _plain_estimate(calibrator, content_class, chars)
        calibrator.observe(MODEL, {content_class: chars}, estimated, chars / true_ratio)

    learnt = calibrator.ratios(MODEL)[content_class]
    assert abs(learnt - true_ratio) <= max(0.02 * true_ratio, 0.1 * start_error)
    # the class ratio explains the error, so the overall factor is not left skewed
    assert calibrator.correction(MODEL) == pytest.approx(1.0, abs=0.05)


def test_one_outlier_cannot_swing_a_ratio() -> None:
    calibrator = Calibrator(PRIORS)
    for _ in range(30):
        estimated = _plain_estimate(calibrator, ContentClass.CODE, 10_000)
        calibrator.observe(MODEL, {ContentClass.CODE: 10_000}, estimated, 10_000 / 2.8)
    settled = calibrator.ratios(MODEL)[ContentClass.CODE]

    # a tool result with 5,000 hidden tokens beside it: the "ratio" looks like 1.2
    estimated = _plain_estimate(calibrator, ContentClass.CODE, 10_000)
    calibrator.observe(MODEL, {ContentClass.CODE: 10_000}, estimated, 10_000 / 2.8 + 5_000)

    assert calibrator.ratios(MODEL)[ContentClass.CODE] >= settled * 0.9


def test_mixed_deltas_teach_the_overall_factor_not_a_class() -> None:
    calibrator = Calibrator(PRIORS)

    for _ in range(40):
        calibrator.observe(
            MODEL, {ContentClass.PROSE: 3_000, ContentClass.CODE: 3_000}, 1_000, 1_200
        )

    assert calibrator.ratios(MODEL) == PRIORS
    assert calibrator.correction(MODEL) == pytest.approx(1.2, abs=0.02)


def test_small_samples_are_ignored() -> None:
    calibrator = Calibrator(PRIORS)

    calibrator.observe(MODEL, {ContentClass.PROSE: 40}, 10, 90)  # 80 tokens of framing noise

    assert calibrator.samples(MODEL) == 0
    assert calibrator.ratios(MODEL) == PRIORS


def test_models_learn_separately() -> None:
    calibrator = Calibrator(PRIORS)

    calibrator.observe(MODEL, {ContentClass.CODE: 10_000}, 2_857, 4_000)

    assert calibrator.ratios(MODEL)[ContentClass.CODE] < PRIORS[ContentClass.CODE]
    assert calibrator.ratios("gpt-5") == PRIORS


@given(st.lists(st.tuples(st.sampled_from(["m1", "m2"]), samples), max_size=30))
def test_state_round_trips_through_json(observations) -> None:
    calibrator = Calibrator(PRIORS)
    for model, (chars_by_class, estimated, actual) in observations:
        calibrator.observe(model, chars_by_class, estimated, actual)

    state = json.loads(json.dumps(calibrator.to_state()))
    restored = Calibrator.from_state(state, PRIORS)

    for model in ("m1", "m2"):
        assert restored.ratios(model) == calibrator.ratios(model)
        assert restored.correction(model) == calibrator.correction(model)
        assert restored.samples(model) == calibrator.samples(model)
    assert restored.to_state() == calibrator.to_state()


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"models": []},
        {"models": {"m": "x"}},
        {"models": {"m": {"ratios": {"prose": "fast", "klingon": 2.0}, "correction": None}}},
        {"models": {"m": {"ratios": {"code": 1e9}, "correction": -3, "samples": -1}}},
    ],
)
def test_damaged_state_degrades_to_bounded_values(state) -> None:
    calibrator = Calibrator.from_state(state, PRIORS)

    for ratio in calibrator.ratios("m").values():
        assert MIN_CHARS_PER_TOKEN <= ratio <= MAX_CHARS_PER_TOKEN
    assert MIN_CORRECTION <= calibrator.correction("m") <= MAX_CORRECTION
    assert calibrator.samples("m") >= 0


def test_an_implausible_sample_is_refused_not_learnt():
    from tokend.core.counting.calibration import Calibrator
    from tokend.core.counting.estimate import DEFAULT_CHARS_PER_TOKEN
    from tokend.core.types import ContentClass

    calibrator = Calibrator(DEFAULT_CHARS_PER_TOKEN)
    before = calibrator.to_state()
    # 10,000 chars of JSON estimated at 3,000 tokens "really" cost 100,000: a miscounted usage.
    assert not calibrator.observe("claude-x", {ContentClass.JSON: 10_000}, 3_000, 100_000)
    assert not calibrator.observe("claude-x", {ContentClass.JSON: 100_000}, 30_000, 1_000)
    assert calibrator.to_state() == before
    assert calibrator.observe("claude-x", {ContentClass.JSON: 10_000}, 3_000, 3_300)
    assert (
        calibrator.ratios("claude-x")[ContentClass.JSON]
        < DEFAULT_CHARS_PER_TOKEN[ContentClass.JSON]
    )
