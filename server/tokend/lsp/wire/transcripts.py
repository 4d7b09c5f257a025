"""The transcripts feature on the wire (protocol.md): follow/start, follow/list, follow/stop."""

from __future__ import annotations

import attrs


@attrs.frozen
class FollowStartParams:
    agent: str
    path: str | None = None
    workspace_uri: str | None = None


@attrs.frozen
class FollowStopParams:
    follower_id: str


@attrs.frozen
class FollowedTranscriptWire:
    path: str
    session_id: str | None
    workspace_uri: str | None
    records: int
    messages: int
    calls: int
    compactions: int
    error: str | None
    caught_up: bool


@attrs.frozen
class FollowerWire:
    follower_id: str
    agent: str
    path: str
    folder: bool
    transcripts: list[FollowedTranscriptWire]


@attrs.frozen
class FollowListResult:
    followers: list[FollowerWire]
