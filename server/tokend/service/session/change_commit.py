"""What the store writes for each change of a session (core.commit.SessionCommit): the
message, the marks, the session row's columns, in one transaction."""

from __future__ import annotations

from dataclasses import replace

from tokend.core.commit import Compacted, SessionCommit, SessionFields
from tokend.core.session.changes import (
    AppendMessage,
    Change,
    CountsUpgraded,
    Delete,
    GrowReply,
    MarkRetired,
    NewWindow,
    PruneParts,
    Restore,
    Rewind,
    UpdateInfo,
)
from tokend.core.session.data import SessionData
from tokend.core.types import SessionFigures
from tokend.core.usage.accounting import provider_compaction


def change_commit(
    before: SessionData, after: SessionData, change: Change, figures: SessionFigures
) -> SessionCommit:
    """What the store writes for `change` (taking `before` to `after`), in one transaction."""
    version = (before.version, after.version)
    fields = SessionFields(figures=figures)
    match change:
        case AppendMessage(message=message):
            compacted: tuple[Compacted, ...] = ()
            if provider_compaction(sp.part for sp in message.parts):
                # A provider's compaction retires the live context before it, marked as a
                # summary marks what it covers (in the same transaction as the boundary).
                covered = tuple(m.id for m in before.messages)
                compacted = (Compacted(covered, message.id, message.created_at),)
            return SessionCommit(
                version,
                message,
                change.counts.total,
                change.tool_outputs,
                compacted=compacted,
                fields=fields,
            )
        case PruneParts(part_ids=part_ids, at=at):
            fields = replace(fields, compacted_at=after.info.compacted_at)
            return SessionCommit(
                version, pruned_part_ids=tuple(part_ids), pruned_at=at, fields=fields
            )
        case NewWindow(message=message, covered=covered):
            fields = replace(fields, compacted_at=after.info.compacted_at)
            compacted = (Compacted(tuple(covered), message.id, message.created_at),)
            return SessionCommit(version, message, compacted=compacted, fields=fields)
        case Rewind(removed=removed, at=at):
            marked = (Compacted(removed, "rewind", at),)
            return SessionCommit(version, compacted=marked, fields=fields)
        case MarkRetired(marks=marks):
            return SessionCommit(version, compacted=marks, fields=fields)
        case CountsUpgraded(message_id=counted, total=total) if after.version > before.version:
            message = next(m for m in after.messages if m.id == counted)
            return SessionCommit(version, fields=fields, recounted=(message, total))
        case GrowReply(message_id=grown, parts=parts, counts=counts):
            message = next(m for m in after.messages if m.id == grown)
            new = (message, len(message.parts) - len(parts), counts.total)
            return SessionCommit(version, fields=fields, grown=new)
        case UpdateInfo():
            info = after.info
            fields = replace(
                fields,
                title=change.title,
                extra=info.extra if change.extra else None,
                chat_files=change.chat_files,
                transcript_cursor=change.transcript_cursor,
            )
        case Delete():
            fields = replace(fields, deleted_at=after.info.deleted_at)
        case Restore():
            fields = replace(fields, restored=True)
    return SessionCommit(version, fields=fields)
