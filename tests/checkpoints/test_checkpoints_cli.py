"""`tokend checkpoints` and `tokend rewind` with no daemon: on the store the session wrote."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from tests.checkpoints.conftest import Agent
from tests.checkpoints.test_checkpoints_rewind import tree, two_turns
from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.cli import _parser
from tokend.commands.checkpoints import run_checkpoints, run_rewind


def parse(*argv: str, url: str) -> argparse.Namespace:
    """The command line as `tokend` itself parses it."""
    return _parser().parse_args(["--database-url", url, *argv])


@pytest.fixture
def agent(checkpointed, workspace: Path) -> Agent:
    app = checkpointed(CheckpointStore())
    return Agent(app.service, app.checkpoints, workspace)


def test_the_cli_lists_turns_and_rewinds_them(agent: Agent, tmp_path: Path):
    url = f"sqlite:///{tmp_path}/tokend.sqlite3"
    first, _, original = two_turns(agent)

    out = io.StringIO()
    assert run_checkpoints(parse("checkpoints", agent.sid, url=url), out) == 0
    listing = out.getvalue()
    assert "docs/notes.md (from notes.md)" in listing and "2 turns checkpointed" in listing

    out = io.StringIO()
    assert run_checkpoints(parse("checkpoints", agent.sid, "--diff", first, url=url), out) == 0
    assert out.getvalue().startswith("--- a/src/app.py\n+++ b/src/app.py\n")

    out = io.StringIO()
    assert run_rewind(parse("rewind", agent.sid, first, "--dry-run", url=url), out) == 0
    assert "would restore 6 files, kept 0" in out.getvalue()
    assert tree(agent.root) != original

    out = io.StringIO()
    assert run_rewind(parse("rewind", agent.sid, first, url=url), out) == 0
    assert "create      notes.md (moved back from docs/notes.md)" in out.getvalue()
    assert tree(agent.root) == original


def test_the_cli_never_offers_force_for_a_path_through_a_symlink(agent: Agent, tmp_path: Path):
    url = f"sqlite:///{tmp_path}/tokend.sqlite3"
    first, _, _ = two_turns(agent)
    outside = tmp_path / "outside"
    outside.mkdir()
    (agent.root / "src").rename(agent.root / "src.bak")
    (agent.root / "src").symlink_to(outside, target_is_directory=True)
    # only the paths under src/ pass through the link; the rest is restored as usual
    (agent.root / "config.toml").write_bytes(b"changed by the user\n")

    out = io.StringIO()
    assert run_rewind(parse("rewind", agent.sid, first, url=url), out) == 1
    said = out.getvalue()
    # src/app.py is kept as changed on disk (--force helps there), src/util.py for the link
    assert "1 path through a symlink not written" in said, said
    assert "--force overwrites the kept files" in said
    assert list(outside.iterdir()) == []  # nothing written through the link

    out = io.StringIO()
    assert run_rewind(parse("rewind", agent.sid, first, "--force", url=url), out) == 1
    said = out.getvalue()
    assert "overwrites" not in said and "2 paths through a symlink not written" in said, said
    assert list(outside.iterdir()) == []
