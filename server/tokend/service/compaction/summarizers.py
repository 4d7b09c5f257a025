"""Who writes a compaction's summary, and the summary change itself.

The `[summarizer] chain` is tried in order (core.compaction.model_summary):
- `client`: a server→client request `session/summarize` {sessionId, prompt, maxTokens} to the
  connection that asked for the compaction; its agent or editor calls its own model and
  answers {summary}. The daemon needs no key.
- `openai`: any OpenAI-compatible `/chat/completions`; `anthropic`: `/v1/messages`. Base URL
  and model from the config, the key from the environment variable the config names. Each
  model of the list is one step (a small model first, the primary after it). The HTTP is
  adapters.model_http's (httpx); here only the `ModelWriter` seam and a factory of writers.
- `extractive` (the default): offline and deterministic (core.compaction.summary); it never fails, so it
  ends every chain.
A model writes only the narrative (objective, decisions, work state, next step), checked
before use; the user's words, the artifact index and the errors stay mechanical around it.
A timeout, an HTTP error, an empty or malformed answer moves to the next step; every step is
reported (`Narrative.steps`), and history is never dropped because a summarizer failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.compaction.digest import digest_to_json
from tokend.core.compaction.history_record import Record, record_digest, record_of
from tokend.core.compaction.model_summary import SummarizerConfig, answer_tokens
from tokend.core.compaction.plan import WindowSplit
from tokend.core.compaction.summary import USER_WORDS_TOKENS, CountMany, digest_of, render_summary
from tokend.core.errors import SummaryFailed
from tokend.core.ports import HttpWriterFactory, ModelWriter
from tokend.core.session.changes import NewWindow
from tokend.core.session.data import SessionData
from tokend.core.types import Message
from tokend.service.compaction.ports import CompactionService
from tokend.service.compaction.summary_parts import Failed as PartsFailed
from tokend.service.compaction.summary_parts import PartsNarrator

log = logging.getLogger(__name__)

AskClient = Callable[[str, str, int], Awaitable[Any]]
"""(sessionId, prompt, maxTokens) -> the client's answer to session/summarize."""

__all__ = ["HttpWriterFactory", "ModelWriter", "SummaryFailed"]

# After this many failures in a row, a model-backed step is not called again for the session
# (until the daemon restarts): Claude Code's and OpenCode's circuit breaker.
BREAKER_FAILURES = 3
TRIPPED = f"failed {BREAKER_FAILURES} times in a row in this session"


class ExtractiveSummarizer:
    """core.compaction.summary's digest, rendered within the budgets (tokens, as `count_many` counts),
    around a model's narrative when one was written."""

    name = "extractive"

    def __init__(self, count_many: CountMany, user_words_tokens: int = USER_WORDS_TOKENS) -> None:
        self._count_many = count_many
        self._user_words_tokens = user_words_tokens
        self.dropped: dict[str, int] = {}

    def summarize(
        self,
        messages: Sequence[Message],
        target_tokens: int,
        instructions: str | None,
        narrative: str | None = None,
        record: Record | None = None,
    ) -> tuple[str, dict[str, Any] | None]:
        """`record` (core.compaction.history_record): what `messages` stand for in the stored history."""
        digest = digest_of(messages) if record is None else record_digest(record)
        rendered = render_summary(
            digest,
            self._count_many,
            target_tokens=target_tokens,
            user_words_tokens=self._user_words_tokens,
            instructions=instructions,
            narrative=narrative,
        )
        self.dropped = dict(rendered.dropped)
        return rendered.text, digest_to_json(digest)


# -- the model-backed writers --------------------------------------------------------------------


class ClientWriter:
    """session/summarize to the connection that asked for the compaction."""

    name = "client"
    model = None

    def __init__(self, ask: AskClient, session_id: str, timeout_s: float) -> None:
        self._ask = ask
        self._session_id = session_id
        self._timeout_s = timeout_s

    async def write(self, prompt: str, max_tokens: int) -> str:
        pending = asyncio.ensure_future(self._ask(self._session_id, prompt, max_tokens))
        try:
            # shield: a late answer still finds its request (it is then ignored)
            answer = await asyncio.wait_for(asyncio.shield(pending), self._timeout_s)
        except TimeoutError:
            raise SummaryFailed(f"the client did not answer within {self._timeout_s:g} s") from None
        except Exception as error:  # a JSON-RPC error from the client, a closed connection
            raise SummaryFailed(f"the client answered with an error ({error})") from None
        summary = answer.get("summary") if isinstance(answer, dict) else None
        if not isinstance(summary, str):
            raise SummaryFailed("the client's answer has no summary string")
        return summary


# -- the chain -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Narrative:
    """What the chain's model-backed steps gave: the checked text (None: the extractive
    summary stands alone), who wrote it, and one line per step tried."""

    text: str | None = None
    by: str = "extractive"
    steps: tuple[str, ...] = ()


def summarizer_window(
    service: CompactionService, data: SessionData, writer: ModelWriter
) -> int | None:
    """Tokens one summarizer request may hold (prompt and answer): an HTTP model's catalog
    window (declared with `[models."NAME"] context_window`); None when unknown (a model the
    catalog does not know, the client summarizer): one request, as core.compaction.model_summary builds
    it."""
    if writer.model is None:
        return None
    info = service.models.catalog_for(data.info.workspace_uri).find(writer.model)
    return info.context_window if info is not None else None


def chain_writers(
    config: SummarizerConfig,
    session_id: str,
    ask_client: AskClient | None,
    http_writer: HttpWriterFactory,
) -> list[ModelWriter | str]:
    """The chain's model-backed steps before "extractive", each a writer, or a line saying why
    the step cannot run (not configured, no client connection)."""
    steps: list[ModelWriter | str] = []
    for entry in config.chain:
        if entry == "extractive":
            break
        if entry == "client":
            if ask_client is None:
                steps.append("client: skipped (no client connection asked for this compaction)")
            else:
                steps.append(ClientWriter(ask_client, session_id, config.timeout_s))
            continue
        base = config.openai_base_url if entry == "openai" else config.anthropic_base_url
        models = config.models(entry)
        if not base.strip() or not models:
            missing = f"{entry}_base_url" if not base.strip() else f"{entry}_model"
            steps.append(f"{entry}: skipped ([summarizer] {missing} is not set)")
            continue
        key_env = config.openai_api_key_env if entry == "openai" else config.anthropic_api_key_env
        steps += [http_writer(entry, base, m, key_env, config.timeout_s) for m in models]
    return steps


async def model_narrative(
    service: CompactionService,
    data: SessionData,
    split: WindowSplit,
    *,
    target_tokens: int,
    instructions: str | None,
    ask_client: AskClient | None = None,
    http_writer: HttpWriterFactory | None = None,
) -> Narrative:
    """The first checked narrative the chain's model-backed steps write for `split.head`, or
    none (the extractive summary then stands alone); every step is reported."""
    config = service.models.config_for(data.info.workspace_uri).summarizer
    writers = chain_writers(config, data.id, ask_client, http_writer or service.http_writer)
    if not writers:
        return Narrative()
    max_tokens = answer_tokens(target_tokens)
    counter = service.models.counter(data.model)

    def extractive(part: Sequence[Message], budget: int) -> str:
        summarizer = ExtractiveSummarizer(counter.count_texts, max(1, budget // 2))
        return summarizer.summarize(part, budget, None)[0]

    steps: list[str] = []
    for writer in writers:
        if isinstance(writer, str):
            steps.append(writer)
            continue
        key = (data.id, writer.name)
        if service.summarizer_failures.get(key, 0) >= BREAKER_FAILURES:
            steps.append(f"{writer.name}: skipped ({TRIPPED})")
            continue
        narrator = PartsNarrator(
            writer,
            summarizer_window(service, data, writer),
            data.message_tokens,
            counter.count_text,
            extractive,
            service.workers.run,
            instructions,
        )
        try:
            text = await narrator.narrate(split.head, max_tokens)
        except (SummaryFailed, PartsFailed) as failed:
            reason = failed.reason
        except Exception as error:  # never lose history to a summarizer's bug
            log.exception("summarizer %s failed", writer.name)
            reason = f"failed ({type(error).__name__})"
        else:  # a success once the summary passes the quality check (service.compaction.quality)
            steps.append(f"{writer.name}: used{narrator.report.line()}")
            return Narrative(text, writer.name, tuple(steps))
        log.warning("session %s: summarizer %s: %s", data.id, writer.name, reason)
        if count_failure(service, data.id, writer.name):
            reason += f" ({TRIPPED}: not called again)"
        steps.append(f"{writer.name}: {reason}")
    steps.append("extractive: used")
    return Narrative(None, "extractive", tuple(steps))


def count_failure(service: CompactionService, session_id: str, step: str) -> bool:
    """One more failure in a row of `step` in the session (an answer refused, or a summary
    refused by the quality check); True when the breaker trips with it."""
    key = (session_id, step)
    service.summarizer_failures[key] = service.summarizer_failures.get(key, 0) + 1
    return service.summarizer_failures[key] == BREAKER_FAILURES


# -- the summary change ------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenSummary:
    change: NewWindow
    summarizer: str
    dropped: dict[str, int]  # items left out for room, by section
    steps: tuple[str, ...] = ()  # the chain's steps, when it had model-backed ones


def write_summary(
    service: CompactionService,
    data: SessionData,
    split: WindowSplit,
    *,
    target_tokens: int,
    user_words_tokens: int,
    instructions: str | None,
    narrative: Narrative = Narrative(),
    history: Sequence[Message] | None = None,
) -> WrittenSummary:
    """The summary of `split.head` as a change (run it in a worker thread: it counts); the
    user's words and the artifact index come from `history` (the session's stored messages),
    when given, as far back as the head reaches (core.compaction.history_record)."""
    summarizer = ExtractiveSummarizer(
        service.models.counter(data.model).count_texts, user_words_tokens
    )
    record = None if history is None else record_of(history, split.head)
    text, digest = summarizer.summarize(
        split.head, target_tokens, instructions, narrative.text, record
    )
    change = service.changes.summary_change(data, text, digest, [m.id for m in split.head])
    return WrittenSummary(change, narrative.by, summarizer.dropped, narrative.steps)
