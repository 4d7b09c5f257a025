"""Checkpoints: which file changes belong to which user turn, and what a code rewind writes.

The workspace keeps a log of file changes (`FileChange`: a path's content hash before and
after, when it was seen, who made it as far as tokend can tell) and each session a mark per
message (`TurnMark`: when it was appended). Everything here is a pure function of those two
lists, so the rules are judged without a disk or a clock:

- A turn starts at a message the user typed and runs until its last agent message (assistant
  or tool). While it is the last turn and the agent still has work in flight (tool calls
  without results, or results the model has not answered) it is open: changes count as the
  agent's until a further message says otherwise.
- A change seen inside a turn's window is the agent's, unless an attached editor made it.
  Changes between turns, before the first turn, or by an editor are `outside`: never reverted
  without being listed. Changes a restore wrote are neither (`restore`).
- A rewind to a message undoes the agent's changes seen after that message: each path goes
  back to its state before the first such change. A path whose newest change is not the
  agent's, whose bytes on disk are not what the log says, or that has an unsaved editor
  buffer, is a conflict: kept unless forced.

Times are wall-clock seconds (floats); hashes are sha256 hex of the file's bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

from tokend.core.config_rules import Check, at_least

Origin = Literal["watch", "editor", "restore", "unwatched"]
Owner = Literal["agent", "outside", "restore"]
Action = Literal["write", "create", "delete", "kept", "unavailable"]

DEFAULT_RETENTION_DAYS = 30
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger file is hashed, its bytes not kept
DEFAULT_MAX_TURN_BYTES = 64 * 1024 * 1024  # new bytes kept per turn before further ones are not


_DAYS = Check(lambda v: v >= 0, "a number of days >= 0")


@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    retention_days: Annotated[float, _DAYS] = DEFAULT_RETENTION_DAYS
    max_file_bytes: Annotated[int, at_least(0)] = DEFAULT_MAX_FILE_BYTES
    max_turn_bytes: Annotated[int, at_least(0)] = DEFAULT_MAX_TURN_BYTES


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path's content moved from `before` to `after` (None: absent). `after_kept` False:
    the new bytes were not saved (`note` says why), so this state cannot be written back."""

    seq: int
    path: str
    before: str | None
    after: str | None
    at: float
    origin: Origin = "watch"
    moved_from: str | None = None  # on the created end of a move
    moved_to: str | None = None  # on the deleted end of a move
    after_kept: bool = True
    note: str | None = None
    before_mode: int | None = None  # permission bits of the `before` state (None: not recorded)


@dataclass(frozen=True, slots=True)
class TurnMark:
    """A message of a session as the checkpointer saw it appended."""

    message_id: str
    at: float
    starts_turn: bool  # a message the user typed
    open_calls: bool = False  # an assistant message with tool calls, or tool results


@dataclass(frozen=True, slots=True)
class Turn:
    message_id: str  # the user message that started it
    start: float
    end: float | None  # the last agent message; None while the agent is still working
    message_ids: tuple[str, ...]


def turns_of(marks: Sequence[TurnMark]) -> list[Turn]:
    """The session's turns, oldest first (marks in append order)."""
    turns: list[Turn] = []
    group: list[TurnMark] = []

    def close(next_start: float | None) -> None:
        if not group:
            return
        head, agent = group[0], group[1:]
        last = agent[-1] if agent else None
        if last is None:
            end: float | None = head.at if next_start is not None else None
        elif not last.open_calls:
            end = last.at
        else:  # work in flight: until the next user message, open while there is none
            end = next_start
        turns.append(Turn(head.message_id, head.at, end, tuple(m.message_id for m in group)))

    for mark in marks:
        if mark.starts_turn:
            close(mark.at)
            group = [mark]
        elif group:
            group.append(mark)
    close(None)
    return turns


@dataclass(frozen=True, slots=True)
class TurnChanges:
    turn: Turn
    agent: tuple[FileChange, ...]  # seen in the turn's window, not by an editor
    outside: tuple[FileChange, ...]  # an editor during the turn; anything until the next turn


def owner_of(change: FileChange, turns: Sequence[Turn]) -> tuple[Owner, int | None]:
    """Whose change it is, and the index of the turn it is filed under (None: before any)."""
    if change.origin == "restore":
        kind: Owner = "restore"
    elif change.origin in ("editor", "unwatched"):
        kind = "outside"
    else:
        kind = "outside"
        for turn in turns:
            if turn.start <= change.at and (turn.end is None or change.at <= turn.end):
                kind = "agent"
                break
    filed = None
    for index, turn in enumerate(turns):
        if turn.start <= change.at:
            filed = index
    return kind, filed


def assign(marks: Sequence[TurnMark], changes: Iterable[FileChange]) -> list[TurnChanges]:
    """Each turn with the agent's changes in it and the outside changes filed under it."""
    turns = turns_of(marks)
    agent: list[list[FileChange]] = [[] for _ in turns]
    outside: list[list[FileChange]] = [[] for _ in turns]
    for change in sorted(changes, key=lambda c: c.seq):
        kind, filed = owner_of(change, turns)
        if filed is None or kind == "restore":
            continue
        (agent if kind == "agent" else outside)[filed].append(change)
    return [
        TurnChanges(t, tuple(a), tuple(o)) for t, a, o in zip(turns, agent, outside, strict=True)
    ]


def pair_moves(changes: Sequence[FileChange]) -> list[FileChange]:
    """Changes of one watcher batch with moves named: a path that vanished and one that
    appeared with the same bytes are the two ends of a move."""
    gone: dict[str, list[int]] = {}
    for i, c in enumerate(changes):
        if c.after is None and c.before is not None:
            gone.setdefault(c.before, []).append(i)
    out = list(changes)
    for i, c in enumerate(changes):
        if c.before is None and c.after is not None and gone.get(c.after):
            j = gone[c.after].pop(0)
            out[i] = replace(c, moved_from=changes[j].path)
            out[j] = replace(out[j], moved_to=c.path)
    return out


# -- rewind -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestoreStep:
    """What a rewind does to one path: write `target` (None: delete) or keep it (`reason`)."""

    path: str
    action: Action
    target: str | None
    current: str | None
    reason: str | None = None
    moved_back_from: str | None = None  # the path this file's bytes were moved to
    mode: int | None = None  # permission bits `target` had (None: not recorded)


@dataclass(frozen=True, slots=True)
class RestorePlan:
    steps: tuple[RestoreStep, ...]
    outside: tuple[str, ...] = field(default=())  # changed since, not by the agent: not touched


def plan_restore(
    point: float,
    marks: Sequence[TurnMark],
    changes: Sequence[FileChange],
    current: Mapping[str, str | None],
    dirty: Iterable[str],
    kept: Callable[[str], bool],
    force: bool,
) -> RestorePlan:
    """The steps that take the agent's changes after `point` back. `current` is each involved
    path's hash on disk now (None: absent); `dirty` the paths with unsaved editor buffers;
    `kept(sha)` whether a state's bytes are saved."""
    turns = turns_of(marks)
    later = sorted((c for c in changes if c.at > point), key=lambda c: c.seq)
    owners = {c.seq: owner_of(c, turns)[0] for c in later}
    runs: dict[str, list[FileChange]] = {}
    for c in later:
        runs.setdefault(c.path, []).append(c)
    dirty_paths = set(dirty)
    steps: list[RestoreStep] = []
    outside: list[str] = []
    for path in sorted(runs):
        run = runs[path]
        ours = [c for c in run if owners[c.seq] == "agent"]
        if not ours:
            if any(owners[c.seq] == "outside" for c in run):
                outside.append(path)
            continue
        target, now, last = ours[0].before, current.get(path), run[-1]
        if target == now:
            continue
        why = _conflict(run, owners, now, path in dirty_paths)
        moved = ours[0].moved_to if target is not None else None
        if target is not None and not kept(target):
            reason = "its earlier bytes were not saved" + (f" ({last.note})" if last.note else "")
            steps.append(RestoreStep(path, "unavailable", target, now, reason))
        elif why and not force:
            steps.append(RestoreStep(path, "kept", target, now, why))
        else:
            action: Action = "delete" if target is None else "create" if now is None else "write"
            mode = ours[0].before_mode if target is not None else None
            steps.append(RestoreStep(path, action, target, now, why, moved, mode))
    return RestorePlan(tuple(steps), tuple(outside))


def _conflict(
    run: Sequence[FileChange], owners: Mapping[int, Owner], now: str | None, dirty: bool
) -> str | None:
    if dirty:
        return "an editor holds unsaved changes to it"
    foreign = [c for c in run if owners[c.seq] == "outside"]
    if foreign:  # even under a later agent change: that change may have kept the edit
        by = "an editor" if any(c.origin == "editor" for c in foreign) else "outside a turn"
        return f"changed since the agent's turn ({by})"
    if now != run[-1].after:
        return "changed on disk since the last change tokend saw"
    return None
