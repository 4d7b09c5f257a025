"""When and what to prune, by the prompt cache's economics (issue 21).

Anthropic and OpenAI bill a request a cache write again from the first byte that changed, so
clearing an old tool result costs, at the next call, a rewrite of everything after it. The
candidates are OpenCode's (core.compaction.prune's rule: tool results older than the newest
`protect_tokens` of tool output, outside the last two user turns, not of a protected tool, back
to the last summary or provider compaction), except that a result cleared earlier is stepped
over rather than ending the walk, so what an earlier batch left is cleared by a later one.

Clearing the candidates from the k-th oldest on frees F tokens and changes the request from the
k-th's message on: R tokens (counted after the prune) are written again instead of read. With
the cache warm that costs R x (write - read) - F x read on the next call, and saves F x read on
each later call. The policy:

- no cache figures (a model without prompt caching, or no call yet): every candidate, as
  OpenCode's rule;
- the cache expired (the next call writes the whole prefix anyway): every candidate, free;
- the cache warm: the batch (the newest candidates, from the k-th on) with the largest saving
  over `horizon_calls` later calls, if it saves anything; else nothing: the candidates wait for
  the cache to expire or for the batch to grow large enough to pay (Anthropic's advice for
  `clear_at_least`), and the prefix before the first cleared result, the cache breakpoints in
  it, stays as it was;
- at the autocompact threshold (the automatic compaction of an append or an assembly; the other
  way out is a summary, which rewrites the whole cache), the cache warm: of the batches that take
  the context under the threshold, the one that saves most (or loses least), H counted from the
  context the batch leaves; every candidate when none gets under it (a summary follows) or the
  cache has expired.

Where the provider clears old tool results itself (Anthropic's context editing: the setting on
for a model it lists, or the last call reported edits it applied), nothing is pruned.

Every batch must free at least `minimum_tokens` (OpenCode's minimum). Tokens; US dollars per token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tokend.core.budget.limits import CompactionConfig
from tokend.core.compaction.prune import PruneConfig, PrunePlan, older_tool_results, plan_prune
from tokend.core.compaction.prune_cache import cache_prices, cache_state, next_call_at
from tokend.core.models.prices import TokenPrices
from tokend.core.session.data import SessionData
from tokend.core.types import Message

PLACEHOLDER_TOKENS = 10  # about what "[Old tool result content cleared]" costs in its place


@dataclass(frozen=True, slots=True)
class Candidate:
    part_id: str
    message_index: int  # in the live context
    tokens: int


@dataclass(frozen=True, slots=True)
class CacheEconomics:
    """The prompt cache as the next call will find it: `warm` (within its lifetime), and the
    model's prices per token for a cache read and a cache write at that lifetime."""

    warm: bool
    read_usd: float
    write_usd: float


def prune_candidates(history: Sequence[Message], cfg: PruneConfig) -> list[Candidate]:
    """The tool results the policy may clear, oldest first (see the module docstring)."""
    two_turns, results = older_tool_results(history, cfg)
    if not two_turns:
        return []
    seen = 0
    found: list[Candidate] = []
    for index, stored, tokens in results:
        if stored.compacted_at is not None:
            continue  # a result cleared earlier does not stop the search for older ones
        seen += tokens
        if seen > cfg.protect_tokens:
            found.append(Candidate(stored.id, index, tokens))
    found.reverse()
    return found


def batch_saving(freed: int, rewritten: int, cache: CacheEconomics, horizon_calls: int) -> float:
    """Dollars a prune saves over the next call and `horizon_calls` later ones (negative: it
    costs more than it saves). `rewritten`: the tokens from the first cleared result on, as the
    request will be after the prune."""
    if not cache.warm:
        return freed * cache.write_usd + horizon_calls * freed * cache.read_usd
    next_call = freed * cache.read_usd - rewritten * (cache.write_usd - cache.read_usd)
    return next_call + horizon_calls * freed * cache.read_usd


def plan_cached_prune(
    history: Sequence[Message],
    message_tokens: Mapping[str, int],
    cfg: PruneConfig,
    cache: CacheEconomics | None,
    horizon_calls: int,
) -> PrunePlan:
    """The batch to clear now (see the module docstring); an empty plan says why."""
    candidates, early = _start(history, cfg, cache)
    if early is not None or cache is None:
        return early or _plan(candidates)
    best = _best_batch(
        history, message_tokens, candidates, cfg, cache, lambda _freed: horizon_calls
    )
    if best is None:
        total = sum(c.tokens for c in candidates)
        return PrunePlan(
            (),
            0,
            f"the prompt cache is warm and clearing {total:,} tokens of old tool output would "
            f"not pay for rewriting the cache after it within {horizon_calls} later call(s): "
            "left for when the cache has expired or the batch pays",
        )
    return _plan(candidates[best:])


@dataclass(frozen=True, slots=True)
class Window:
    """The live context at the autocompact threshold: its tokens, the threshold, and what a call
    adds to it on average (None before two calls)."""

    used_tokens: int
    threshold: int
    growth_per_call: float | None

    def horizon(self, freed: int) -> int:
        """Later calls before a context `freed` tokens smaller reaches the threshold again."""
        room = self.threshold - (self.used_tokens - freed)
        if not self.growth_per_call or room <= 0:
            return 1
        return max(1, int(room / self.growth_per_call))


def plan_threshold_prune(
    history: Sequence[Message],
    message_tokens: Mapping[str, int],
    cfg: PruneConfig,
    cache: CacheEconomics | None,
    window: Window,
) -> PrunePlan:
    """At the autocompact threshold (see the module docstring): the batch that gets the context
    under the threshold with the cache's best economics, else every candidate."""
    candidates, early = _start(history, cfg, cache)
    if early is not None or cache is None:
        return early or _plan(candidates)
    need = window.used_tokens - window.threshold + 1  # net tokens to free
    best = _best_batch(
        history, message_tokens, candidates, cfg, cache, window.horizon, need=need, loss=True
    )
    return _plan(candidates if best is None else candidates[best:])


def _start(
    history: Sequence[Message], cfg: PruneConfig, cache: CacheEconomics | None
) -> tuple[list[Candidate], PrunePlan | None]:
    """The candidates, and the plan when the cache's economics have nothing to decide: an
    empty one (with why) when they cannot make a batch, every candidate when the cache is cold
    or unknown; None when a warm cache must choose the batch."""
    candidates = prune_candidates(history, cfg)
    total = sum(c.tokens for c in candidates)
    if not candidates:
        why = f"no old tool output beyond the {cfg.protect_tokens:,} tokens kept"
        return candidates, PrunePlan((), 0, why)
    if total < cfg.minimum_tokens:
        why = (
            f"pruning would free only {total:,} tokens, under the minimum of {cfg.minimum_tokens:,}"
        )
        return candidates, PrunePlan((), 0, why)
    if cache is None or not cache.warm:
        return candidates, _plan(candidates)
    return candidates, None


def _plan(batch: Sequence[Candidate]) -> PrunePlan:
    return PrunePlan(tuple(c.part_id for c in batch), sum(c.tokens for c in batch))


def _best_batch(
    history: Sequence[Message],
    message_tokens: Mapping[str, int],
    candidates: Sequence[Candidate],
    cfg: PruneConfig,
    cache: CacheEconomics,
    horizon: Callable[[int], int],
    *,
    need: int = 0,
    loss: bool = False,
) -> int | None:
    """The index of the oldest candidate of the batch that saves most, None if none saves
    (with `loss`, the one that loses least is taken too). A batch must free `need` tokens net
    of its placeholders; `horizon` gives the later calls a batch freeing F tokens is good for."""
    # tokens from each message to the end, as the context is now
    suffix = [0] * (len(history) + 1)
    for i in range(len(history) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + message_tokens.get(history[i].id, 0)
    best: tuple[float, int] | None = None
    freed = 0
    for k in range(len(candidates) - 1, -1, -1):
        freed += candidates[k].tokens
        placeholders = (len(candidates) - k) * PLACEHOLDER_TOKENS
        if freed < cfg.minimum_tokens or freed - placeholders < need:
            continue
        rewritten = max(0, suffix[candidates[k].message_index] - freed) + placeholders
        saving = batch_saving(freed, rewritten, cache, horizon(freed))
        if (loss or saving > 0) and (best is None or saving > best[0]):
            best = (saving, k)
    return None if best is None else best[1]


def horizon_calls(
    calls_in_window: int, first_context: int, used_tokens: int, threshold: int
) -> int:
    """Later calls expected before the window ends at the autocompact threshold (a summary
    rewrites the cache anyway), at the window's mean growth per call so far; at least 1."""
    growth = _growth(calls_in_window, first_context, used_tokens)
    if growth is None:
        return 1
    return max(1, int((threshold - used_tokens) / growth))


def _growth(calls_in_window: int, first_context: int, used_tokens: int) -> float | None:
    """Mean tokens a call added to the window so far; None before two calls or without growth."""
    if calls_in_window < 2 or used_tokens <= first_context:
        return None
    return (used_tokens - first_context) / (calls_in_window - 1)


def cache_economics(
    messages: Sequence[Message], rates: TokenPrices, now: datetime
) -> CacheEconomics | None:
    """The cache the next call finds (core.compaction.prune_cache: its lifetime and age, judged when the
    next call is made), priced at `rates`; None when no call wrote or read the cache."""
    state = cache_state(messages, next_call_at(messages, now))
    if state is None:
        return None
    read, write = cache_prices(rates, state.ttl_s)
    return CacheEconomics(state.warm, read, write)


def _calls(messages: Sequence[Message], used_tokens: int) -> tuple[int, int]:
    """The live context's provider calls, and the first one's context (else `used_tokens`)."""
    calls = [m.usage for m in messages if m.usage is not None]
    return len(calls), calls[0].context_tokens if calls else used_tokens


def window_horizon(messages: Sequence[Message], used_tokens: int, threshold: int) -> int:
    """horizon_calls for the live context `messages` (its calls, the first call's context)."""
    count, first = _calls(messages, used_tokens)
    return horizon_calls(count, first, used_tokens, threshold)


PROVIDER_CLEARS = (
    "the provider clears this session's old tool results (Anthropic's context editing, "
    "clear_tool_uses_20250919): tokend does not clear them too"
)


def session_prune_plan(
    data: SessionData,
    cfg: CompactionConfig,
    rates: TokenPrices,
    now: datetime,
    threshold: int,
    *,
    provider_clears: bool = False,
) -> PrunePlan:
    """The prune tier's plan for a session: `cfg.prune_policy` "cache" (this module) or
    "eager" (core.compaction.prune alone); `rates` the model's prices at the context's tier. Nothing when
    the provider clears old tool results (`provider_clears`: the session's context editing
    setting; or the last call reported edits the provider applied)."""
    if provider_clears or (data.anchor is not None and data.anchor.call.cleared_input_tokens):
        return PrunePlan((), 0, PROVIDER_CLEARS)
    rule = PruneConfig(
        protect_tokens=cfg.prune_protect_tokens,
        minimum_tokens=cfg.prune_minimum_tokens,
        protected_tools=tuple(cfg.protected_tools),
    )
    if cfg.prune_policy == "eager":
        return plan_prune(data.messages, rule)
    used = data.used_tokens()[0]
    cached = data.model.supports_prompt_caching
    economics = cache_economics(data.messages, rates, now) if cached else None
    if used >= threshold:
        count, first = _calls(data.messages, used)
        window = Window(used, threshold, _growth(count, first, used))
        return plan_threshold_prune(data.messages, data.message_tokens, rule, economics, window)
    horizon = window_horizon(data.messages, used, threshold)
    return plan_cached_prune(data.messages, data.message_tokens, rule, economics, horizon)
