"""Issue 21: the prune policy driven by the prompt cache's economics. Oracle: Anthropic's published
Claude Sonnet prices ($0.30 per million cache-read tokens, $3.75 per million 5-minute cache-write
tokens) and the dollars worked out by hand in each test, not through the policy's own helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tokend.core.compaction.prune import PruneConfig, plan_prune
from tokend.core.compaction.prune_policy import (
    CacheEconomics,
    Window,
    cache_economics,
    plan_cached_prune,
    plan_threshold_prune,
)
from tokend.core.models.prices import TokenPrices
from tokend.core.types import Message, StoredPart, TextPart, ToolCallPart, ToolResultPart, Usage

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
READ, WRITE = 0.30 / 1e6, 3.75 / 1e6
RULE = PruneConfig(protect_tokens=40_000, minimum_tokens=20_000)
WARM = CacheEconomics(True, READ, WRITE)
COLD = CacheEconomics(False, READ, WRITE)


def user(mid: str, at: datetime = T0) -> Message:
    return Message(mid, "s", "user", (StoredPart(f"{mid}.t", TextPart("go on"), 3),), at)


def call(mid: str, usage: Usage | None = None, at: datetime = T0) -> Message:
    part = StoredPart(f"{mid}.c", ToolCallPart(mid, "Read", {"file_path": mid}), 20)
    return Message(mid, "s", "assistant", (part,), at, usage=usage, completed_at=at)


def result(mid: str, tokens: int, at: datetime = T0, cleared: bool = False) -> Message:
    part = ToolResultPart(mid, "Read", "x")
    stored = StoredPart(f"{mid}.r", part, tokens, at if cleared else None)
    return Message(f"{mid}.m", "s", "user", (stored,), at)


def text(mid: str, tokens: int) -> Message:
    return Message(mid, "s", "assistant", (StoredPart(f"{mid}.t", TextPart("notes"), tokens),), T0)


def session(
    sizes: list[int], tail_tokens: int = 500, text_after: dict[int, int] | None = None
) -> tuple[list[Message], dict[str, int]]:
    """One user turn reading files of `sizes` tokens (with assistant text of `text_after[i]`
    tokens after the i-th), then two short user turns (protected), the last `tail_tokens` long."""
    messages = [user("u0")]
    for i, size in enumerate(sizes):
        messages += [call(f"r{i}"), result(f"r{i}", size)]
        if text_after and i in text_after:
            messages.append(text(f"t{i}", text_after[i]))
    messages += [user("u1"), call("a1"), user("u2"), call("a2")]
    tokens = {m.id: sum(sp.tokens or 0 for sp in m.parts) for m in messages}
    tokens["a2"] += tail_tokens
    return messages, tokens


def test_a_warm_cache_keeps_a_batch_that_does_not_pay_for_its_rewrite():
    # 40k protected, then 25k of candidates (the oldest two results), 150k of talk after
    messages, tokens = session([12_500, 12_500, 40_000], tail_tokens=150_000)
    eager = plan_prune(messages, RULE)
    assert eager.freed_tokens == 25_000  # OpenCode would clear them now
    plan = plan_cached_prune(messages, tokens, RULE, WARM, horizon_calls=10)
    # by hand: the next call writes ~190k again: 190,000 x (3.75 - 0.30)/1e6 = $0.66,
    # while 25,000 x $0.30/1e6 x 11 calls saves $0.08
    assert plan.part_ids == ()
    assert "would not pay" in (plan.skipped_reason or "")


def test_the_same_batch_is_cleared_when_the_cache_has_expired():
    messages, tokens = session([12_500, 12_500, 40_000], tail_tokens=150_000)
    plan = plan_cached_prune(messages, tokens, RULE, COLD, horizon_calls=10)
    assert plan.part_ids == ("r0.r", "r1.r")
    assert plan.freed_tokens == 25_000


def test_without_cache_figures_the_rule_is_opencodes():
    messages, tokens = session([12_500, 12_500, 40_000], tail_tokens=150_000)
    plan = plan_cached_prune(messages, tokens, RULE, None, horizon_calls=10)
    assert plan.part_ids == plan_prune(messages, RULE).part_ids


def test_a_warm_cache_clears_the_newest_batch_that_pays_and_keeps_the_prefix_before_it():
    # candidates: a 5k result, 100k of the agent's talk, a 100k result; 40k protected after
    messages, tokens = session([5_000, 100_000, 40_000], text_after={0: 100_000})
    plan = plan_cached_prune(messages, tokens, RULE, WARM, horizon_calls=20)
    # clearing r1 alone rewrites ~40.5k: the next call costs 40,500 x 3.45e-6 - 100,000 x
    # 0.3e-6 = $0.11 more, and 20 later calls save 20 x $0.03: +$0.49.
    # Clearing r0 too rewrites the 100k of talk after it: +$0.18 only.
    assert plan.part_ids == ("r1.r",)
    assert plan.freed_tokens == 100_000
    assert plan_prune(messages, RULE).part_ids == ("r0.r", "r1.r")


def test_a_result_cleared_earlier_does_not_end_the_walk():
    messages, tokens = session([30_000, 1_000, 40_000])
    messages[4] = result("r1", 1_000, cleared=True)
    plan = plan_cached_prune(messages, tokens, RULE, COLD, horizon_calls=5)
    assert plan.part_ids == ("r0.r",)
    assert plan_prune(messages, RULE).part_ids == ()  # OpenCode's walk stops at r1


def test_the_last_two_user_turns_are_never_cleared():
    messages, tokens = session([30_000])
    messages += [call("big"), result("big", 500_000)]  # in the current turn
    plan = plan_cached_prune(messages, tokens, RULE, COLD, horizon_calls=5)
    assert "big.r" not in plan.part_ids


def test_the_cache_is_judged_when_the_next_call_is_made():
    """The newest message came 6 minutes after the last call: the next call finds the 5-minute
    cache expired, whatever the clock says."""
    prices = TokenPrices(input=3e-6, cache_read=READ, cache_write=WRITE)
    used = Usage(10, 40, 0, 50_000, 2_000)
    history = [user("u0"), call("a0", used, T0), result("a0", 5_000, T0 + timedelta(minutes=6))]
    late = cache_economics(history, prices, T0 + timedelta(minutes=6, seconds=1))
    assert late == CacheEconomics(False, READ, WRITE)
    soon = cache_economics(history[:2], prices, T0 + timedelta(seconds=30))
    assert soon == CacheEconomics(True, READ, WRITE)


# -- at the autocompact threshold (the automatic path) -----------------------------------------


def test_at_the_threshold_a_warm_cache_clears_the_newest_batch_that_gets_under_it():
    # candidates: r0 (5k), then 100k of talk, then r1 (100k); 40k protected after them.
    # The context is 50k over a 168k threshold and grows 10k a call.
    messages, tokens = session([5_000, 100_000, 40_000], text_after={0: 100_000})
    window = Window(used_tokens=218_000, threshold=168_000, growth_per_call=10_000)
    plan = plan_threshold_prune(messages, tokens, RULE, WARM, window)
    # by hand: r1 alone frees 100k (under the threshold by ~50k: 5 later calls) and rewrites
    # ~40.6k: 100,000 x 0.3e-6 - 40,576 x 3.45e-6 + 5 x 100,000 x 0.3e-6 = +$0.04; r0 too
    # rewrites the 100k of talk after it (~140.6k): 105,000 x 0.3e-6 - 140,606 x 3.45e-6
    # + 5 x 105,000 x 0.3e-6 = -$0.30. OpenCode's rule (main's path here) clears both.
    assert plan.part_ids == ("r1.r",)
    assert plan_prune(messages, RULE).part_ids == ("r0.r", "r1.r")


def test_at_the_threshold_the_batch_that_gets_under_it_is_taken_even_at_a_loss():
    # 102k over: r1 alone (100k) is not enough; r0 and r1 (105k) are, and cost more than they
    # save with the cache warm, but the other way out is a summary that rewrites everything
    messages, tokens = session([5_000, 100_000, 40_000], text_after={0: 100_000})
    window = Window(used_tokens=270_000, threshold=168_000, growth_per_call=10_000)
    plan = plan_threshold_prune(messages, tokens, RULE, WARM, window)
    assert plan.part_ids == ("r0.r", "r1.r")


def test_at_the_threshold_every_candidate_when_none_gets_under_it_or_the_cache_is_cold():
    messages, tokens = session([5_000, 100_000, 40_000], text_after={0: 100_000})
    far = Window(used_tokens=400_000, threshold=168_000, growth_per_call=10_000)
    assert plan_threshold_prune(messages, tokens, RULE, WARM, far).part_ids == ("r0.r", "r1.r")
    near = Window(used_tokens=218_000, threshold=168_000, growth_per_call=10_000)
    assert plan_threshold_prune(messages, tokens, RULE, COLD, near).part_ids == ("r0.r", "r1.r")
    assert plan_threshold_prune(messages, tokens, RULE, None, near).part_ids == ("r0.r", "r1.r")
