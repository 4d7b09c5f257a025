"""A real workspace folder, the real service on a real SQLite file, a real checkpoint store."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.appending import append
from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.core.checkpoints.turns import FileChange
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.service.app import App, assemble_app, open_service
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.service import TokendService

WAIT_SECONDS = 30.0  # how long a condition may take on a loaded machine (not a figure)


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    """Wait until `condition()` holds; fail naming `what` if it never does."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.02)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("def helper(x):\n    return x * 2\n")
    (root / "notes.md").write_text("# Notes\n\nkeep this\n")
    (root / "logo.bin").write_bytes(bytes(range(256)) * 8)
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\x7fELF ignored")
    return root


class Agent:
    """A session in `root` driven like an agent: appends, tool calls, and files changed on
    disk the way an edit tool or a shell would, each waited for until the watcher logged it."""

    def __init__(self, service: TokendService, checkpoints: Checkpoints, root: Path) -> None:
        self.service, self.checkpoints, self.root = service, checkpoints, root
        self.key = root.resolve().as_uri()
        self.sid = service.sessions.create_session("gpt-4o", workspace_uri=root.as_uri()).id
        self._calls = 0

    def user(self, text: str) -> str:
        message, _ = append(self.service, self.sid, "user", [TextPart(text)])
        wait_for("the first walk", lambda: self.checkpoints.walked(self.key))
        return message.id

    def tool(self, name: str, change: Callable[[], None], *paths: str) -> None:
        self._calls += 1
        call = f"call{self._calls}"
        append(self.service, self.sid, "assistant", [ToolCallPart(call, name, {"paths": paths})])
        seq = self.last_seq()
        change()
        self.wait_logged(seq, *paths)
        append(self.service, self.sid, "tool", [ToolResultPart(call, name, "done")])

    def reply(self, text: str) -> str:
        message, _ = append(self.service, self.sid, "assistant", [TextPart(text)])
        return message.id

    def changes(self) -> list[FileChange]:
        return self.checkpoints.store.changes(self.key)

    def last_seq(self) -> int:
        return max((c.seq for c in self.changes()), default=0)

    def wait_logged(self, after_seq: int, *paths: str) -> None:
        def logged() -> bool:
            return set(paths) <= {c.path for c in self.changes() if c.seq > after_seq}

        wait_for(f"the watcher logging {paths}", logged)

    def call(self, work: Callable[[], object]) -> object:
        return self.checkpoints.submit(work).result()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[TokendService]:
    service = open_service(None, f"sqlite:///{tmp_path}/tokend.sqlite3")
    yield service
    service.close()


@pytest.fixture
def checkpointed(service: TokendService) -> Iterator[Callable[[CheckpointStore], App]]:
    """The app's parts around `service` with a checkpointer on the store given, as the daemon
    builds them (service/app.py); stopped before the service closes."""
    made: list[App] = []

    def make(store: CheckpointStore) -> App:
        made.append(assemble_app(service, checkpoint_store=store))
        return made[-1]

    yield make
    for app in made:
        app.workspaces.close()
        app.checkpoints.close()
        app.usage.close()


@pytest.fixture
def agent(checkpointed: Callable[[CheckpointStore], App], workspace: Path, tmp_path: Path) -> Agent:
    app = checkpointed(CheckpointStore(tmp_path / "checkpoints"))
    return Agent(app.service, app.checkpoints, workspace)
