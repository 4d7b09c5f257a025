"""The workspace feature on the wire (protocol.md): files/add, /drop, /list (the files a session
sends, with what each costs), workspace/fileTokens and the workspace/didChangeFileTokens
notification. (The textDocument/* and workspace folder notifications take LSP's own types.)"""

from __future__ import annotations

import attrs

from tokend.lsp.wire.common import omitted


@attrs.frozen
class FilesChangeParams:
    session_id: str
    paths: list[str]
    read_only: bool = False


@attrs.frozen
class FilesListParams:
    session_id: str


@attrs.frozen
class FileTokensParams:
    workspace_uri: str
    paths: list[str] | None = None
    exact: bool = False
    session_id: str | None = None


@attrs.frozen
class SessionFileWire:
    """A file a session sends: `tokens` of its block as sent."""

    path: str
    read_only: bool
    tokens: int
    dirty: bool
    reason: str | None = omitted()


@attrs.frozen
class MemoryFileWire:
    """A memory file: `tokens` of its block (0 when cut, `cut` saying why)."""

    path: str
    scope: str
    tokens: int
    cut: str | None = omitted()
    note: str | None = omitted()


@attrs.frozen
class FilesListing:
    files: list[SessionFileWire]
    memory: list[MemoryFileWire]
    chat_files_tokens: int
    memory_tokens: int
    warnings: list[str]


@attrs.frozen
class FileFigureWire:
    """One file's figure: `bytes` on disk (or of the unsaved text), `tokens` of its text."""

    path: str
    bytes: int
    tokens: int
    basis: str
    dirty: bool
    reason: str | None = omitted()


@attrs.frozen
class DidChangeFileTokensParams:
    workspace_uri: str
    files: list[FileFigureWire]
