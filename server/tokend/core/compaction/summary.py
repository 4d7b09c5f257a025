"""The extractive summary: what compaction keeps of the messages it takes out of the context.

Built from the history itself, offline and deterministic (the same messages give the same
text): the user's own messages verbatim (newest first within `user_words_tokens`, Codex keeps
~20,000 tokens of them), the artifact index (core.artifacts: files and commands, mechanically),
the exact error strings, the agent's last plan, its last conclusions and the next step, within
`target_tokens` (the history-summary target, core.budget.limits). A `Digest` holds everything
extracted; the summary message keeps it, so the next compaction merges it with what it adds
instead of summarizing a summary. All budgets are tokens, as `count_many` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tokend.core.artifacts import FileTouch, extract_artifacts
from tokend.core.compaction.digest import Digest, digest_from_json
from tokend.core.compaction.prune import is_user_turn
from tokend.core.types import CompactionPart, Message, TextPart

USER_WORDS_TOKENS = 20_000  # Codex keeps ~20k tokens of the user's messages
INTERRUPTED = "[Request interrupted by user"
MAX_CONCLUSIONS = 3
MAX_CONCLUSION_CHARS = 1_500
MAX_COMMAND_CHARS = 300
MAX_OBJECTIVE_CHARS = 600
MAX_INSTRUCTIONS_CHARS = 2_000
MAX_FOREIGN_CHARS = 6_000  # the newest foreign summary, cut around the middle beyond this
# What a digest keeps at most across merges (the rendered summary holds less).
KEEP_USER_WORDS, KEEP_COMMANDS, KEEP_ERRORS, KEEP_FOREIGN = 400, 1_000, 500, 3

CountMany = Callable[[Sequence[str]], Sequence[int]]


@dataclass(frozen=True, slots=True)
class RenderedSummary:
    text: str
    dropped: Mapping[str, int]  # section -> oldest items left out for the budget


def user_text(message: Message) -> str | None:
    """What the user typed in a user turn (None: not a user turn, or nothing typed)."""
    if not is_user_turn(message):
        return None
    texts = [sp.part.text for sp in message.parts if isinstance(sp.part, TextPart)]
    text = "\n".join(t for t in texts if t.strip())
    if not text.strip() or text.startswith(INTERRUPTED):
        return None
    return text


def digest_of(messages: Sequence[Message], previous: Digest | None = None) -> Digest:
    """The digest of `messages` (a previous summary among them is merged, not re-read)."""
    fresh = [m for m in messages if not m.summary]
    for message in messages:
        if message.summary:
            for stored in message.parts:
                if isinstance(stored.part, CompactionPart) and stored.part.digest is not None:
                    previous = merge(previous, digest_from_json(stored.part.digest))
    words = tuple(t for t in (user_text(m) for m in fresh) if t is not None)
    found = extract_artifacts(fresh)
    conclusions = [
        sp.part.text.strip()
        for m in fresh
        if m.role == "assistant"
        for sp in m.parts
        if isinstance(sp.part, TextPart) and sp.part.text.strip()
    ]
    digest = Digest(
        objective=words[0] if words else None,
        user_words=words,
        files=found.files,
        commands=found.commands,
        errors=found.errors,
        conclusions=tuple(conclusions[-MAX_CONCLUSIONS:]),
        todos=found.todos,
        messages=len(fresh),
    )
    return merge(previous, digest) if previous is not None else digest


def merge(previous: Digest | None, new: Digest) -> Digest:
    """`previous` followed by `new`: lists appended, files merged by path, the newest plan
    and conclusions win, the first objective stays."""
    if previous is None:
        return new
    files: dict[str, dict[str, int]] = {}
    for touch in (*previous.files, *new.files):
        ops = files.setdefault(touch.path, {})
        for op, times in touch.ops:
            ops[op] = ops.get(op, 0) + times
    return Digest(
        objective=previous.objective or new.objective,
        user_words=(*previous.user_words, *new.user_words)[-KEEP_USER_WORDS:],
        files=tuple(FileTouch(p, tuple(ops.items())) for p, ops in files.items()),
        commands=(*previous.commands, *new.commands)[-KEEP_COMMANDS:],
        errors=tuple(dict.fromkeys((*previous.errors, *new.errors)))[-KEEP_ERRORS:],
        conclusions=new.conclusions or previous.conclusions,
        todos=new.todos or previous.todos,
        messages=previous.messages + new.messages,
        foreign=(*previous.foreign, *new.foreign)[-KEEP_FOREIGN:],
    )


def next_step(digest: Digest) -> str | None:
    """The plan's step in progress (else its first pending one), else how the assistant's
    last text ends."""
    for wanted in ("in_progress", "pending"):
        for status, text in digest.todos:
            if status == wanted:
                return f"{'Continue' if wanted == 'in_progress' else 'Start'}: {text}"
    if digest.conclusions:
        return "The assistant's last words were: " + _cut_start(digest.conclusions[-1], 600)
    return None


def render_summary(
    digest: Digest,
    count_many: CountMany,
    *,
    target_tokens: int,
    user_words_tokens: int = USER_WORDS_TOKENS,
    instructions: str | None = None,
    narrative: str | None = None,
) -> RenderedSummary:
    """The summary's text: the user's words within `user_words_tokens`, the rest within
    `target_tokens`; what does not fit is left out oldest first, and counted in `dropped`.

    `narrative` is a model's checked answer (core.compaction.model_summary: objective, decisions, work
    state, next step): it replaces the extractive conclusions and next step; the user's words,
    the plan, the artifact index and the errors stay mechanical around it."""
    dropped: dict[str, int] = {}
    sections: list[str] = []
    if narrative:
        sections.append(narrative.strip())
    words = newest_within(digest.user_words, count_many, user_words_tokens)
    if len(words) < len(digest.user_words):
        dropped["userMessages"] = len(digest.user_words) - len(words)
    if digest.objective and digest.objective not in words:  # else it is quoted below
        objective = _cut(digest.objective, MAX_OBJECTIVE_CHARS)
        sections.append("## Objective (the user's first request)\n" + objective)
    if instructions:
        focus = _cut(instructions, MAX_INSTRUCTIONS_CHARS)
        sections.append("## Instructions for this summary\n" + focus)
    if words:
        total = len(words)
        blocks = [f"--- user message {i} of {total} ---\n{text}" for i, text in enumerate(words, 1)]
        sections.append("## The user's messages (verbatim, oldest first)\n" + "\n".join(blocks))
    if digest.todos:
        plan = "\n".join(f"- [{status}] {text}" for status, text in digest.todos[:50])
        sections.append("## Work state (the agent's last plan)\n" + plan)
    step = None if narrative else next_step(digest)
    # The artifact index comes first: every file, unless the files alone pass the target.
    files = [f"- {t.path}: {_ops(t)}" for t in digest.files]
    kept_files, left = _grant(files, count_many, target_tokens, 1.0, dropped, "files")
    fixed = [s for s in sections if not s.startswith("## The user's messages")]
    left -= sum(count_many(fixed)) + (count_many([step])[0] if step else 0)
    errors = [f"- {e}" for e in digest.errors]
    kept_errors, left = _grant(errors, count_many, left, 0.5, dropped, "errors")
    commands = [f"- `{_cut(c.command, MAX_COMMAND_CHARS)}` → {c.status}" for c in digest.commands]
    kept_commands, left = _grant(commands, count_many, left, 0.7, dropped, "commands")
    conclusions = [] if narrative else [_cut(c, MAX_CONCLUSION_CHARS) for c in digest.conclusions]
    kept_conclusions, left = _grant(conclusions, count_many, left, 1.0, dropped, "conclusions")
    foreign = [_cut(text, MAX_FOREIGN_CHARS) for text in digest.foreign[-1:]]
    kept_foreign, left = _grant(foreign, count_many, left, 1.0, dropped, "foreignSummaries")
    sections += _record_sections(
        kept_files, kept_commands, kept_errors, kept_conclusions, kept_foreign, step
    )
    omitted = ", ".join(f"{n} {name}" for name, n in dropped.items())
    header = f"{digest.messages} earlier messages, summarized."
    if omitted:
        header += f" Left out for room (oldest first): {omitted}."
    return RenderedSummary("\n\n".join([header, *sections]), dropped)


def _record_sections(
    files: list[str],
    commands: list[str],
    errors: list[str],
    conclusions: list[str],
    foreign: list[str],
    step: str | None,
) -> list[str]:
    """The mechanical sections after the user's words: the artifact index, the exact errors,
    the last conclusions, the agent's own earlier summary as written, the next step."""
    sections, index = [], []
    if files:
        index.append("Files (path: what was done, in order):\n" + "\n".join(files))
    if commands:
        index.append("Commands run (oldest first) → exit status:\n" + "\n".join(commands))
    if index:
        sections.append("## Artifact index (from the tool calls)\n" + "\n".join(index))
    if errors:
        sections.append("## Errors seen (exact strings)\n" + "\n".join(errors))
    if conclusions:
        sections.append("## The assistant's last conclusions\n" + "\n\n".join(conclusions))
    if foreign:
        sections.append(
            "## The agent's own earlier summary (its words as written; the sections above are "
            "drawn from the original messages)\n" + foreign[0]
        )
    if step:
        sections.append("## Next step\n" + step)
    return sections


def _grant(
    items: list[str],
    count_many: CountMany,
    left: int,
    share: float,
    dropped: dict[str, int],
    key: str,
) -> tuple[list[str], int]:
    """The newest of `items` within `share` of the `left` tokens; returns them (oldest first)
    and the tokens left."""
    kept = newest_within(items, count_many, int(max(0, left) * share))
    if len(kept) < len(items):
        dropped[key] = len(items) - len(kept)
    used = sum(count_many(kept)) + len(kept) if kept else 0
    return kept, left - used


def newest_within(items: Sequence[str], count_many: CountMany, budget: int) -> list[str]:
    """The newest of `items` within `budget` tokens (one more each), oldest first."""
    if not items:
        return []
    costs = count_many(list(items))
    kept: list[str] = []
    total = 0
    for item, cost in zip(reversed(items), reversed(list(costs)), strict=True):
        if total + cost + 1 > budget:
            break
        kept.append(item)
        total += cost + 1
    kept.reverse()
    return kept


def _ops(touch: FileTouch) -> str:
    return ", ".join(op if times == 1 else f"{op} ×{times}" for op, times in touch.ops)


def _cut(text: str, limit: int) -> str:
    """`text` whole, or its start and end around a marked cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half:,} characters left out …]\n{text[-half:]}"


def _cut_start(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]
