"""Stopping a service's background work in order, in bounded time.

`begin_stop` runs on the event loop as a stop begins and never waits: every workspace's build,
watcher batch and checkpoint walk is told to stop at its next file, and whoever waits for a
first index or the repo map's tags wakes up to a Stopping error (the daemon still answers
it). `finish_stop` then ends the threads, in order: the followers (the transcripts they import
into sessions), the workspaces (builds, watchers, their hook threads), the checkpointer's
thread, and the service itself (its workers, the store). Each waits a bounded time; a thread
still running after it is named in the log, and being a daemon thread it cannot hold up the
process's exit.
"""

from __future__ import annotations

import logging

from tokend.service.checkpoints import existing_checkpoints
from tokend.service.followers import Followers
from tokend.service.service import TokendService
from tokend.service.workspace.registry import existing_workspaces

log = logging.getLogger(__name__)


def begin_stop(service: TokendService) -> None:
    """Tell the background work to stop (no waiting: on the event loop)."""
    workspaces = existing_workspaces(service)
    if workspaces is not None:
        workspaces.begin_close()


def finish_stop(service: TokendService) -> None:
    """End the background work and close the service (call it once requests are answered;
    on the event loop's thread when followers run there)."""
    begin_stop(service)
    followers = Followers.existing(service)
    if followers is not None:
        followers.close()
    workspaces = existing_workspaces(service)
    if workspaces is not None:
        workspaces.close()
    checkpoints = existing_checkpoints(service)
    if checkpoints is not None:
        checkpoints.close()
    service.close()
