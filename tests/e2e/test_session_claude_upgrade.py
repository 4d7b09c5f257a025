"""End to end: a big Claude message is answered with its estimate at once and upgraded to its
exact count when that lands (budget/didChange), through tokend's standalone server (in the
test's process, tests/in_process.py; the one killed with -9 a real `tokend lsp --standalone`
process) on a real SQLite file and on the suite's real PostgreSQL (tests/pg.py); a restart keeps
the exact count. Oracle: ctok's count of the text (one user message: its content plus the 13 the gauge shows beyond it for a one-message v3
request, as tests/e2e/test_counting_claude_tier.py measures)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import ctok
import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import ProcessClient

BEYOND_CONTENT = 13  # what the gauge shows beyond ctok's content count, one v3 message


def big_python(chars: int) -> str:
    """Varied Python source of about `chars` characters (not one line repeated)."""
    out: list[str] = []
    i = 0
    while sum(map(len, out)) < chars:
        out.append(
            f"def handler_{i}(request, *, retries: int = {i % 7}) -> dict[str, str]:\n"
            f"    '''Serve request {i} of batch {i // 13}.'''\n"
            f"    return {{'status': 'ok', 'id': '{i:x}', 'attempt': str(retries * {i % 5})}}\n\n\n"
        )
        i += 1
    return "".join(out)


def messages_basis(snapshot: dict[str, Any]) -> str:
    return next(b["basis"] for b in snapshot["breakdown"] if b["category"] == "messages")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store's URL: a SQLite file, or a fresh database of the suite's real PostgreSQL."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


async def spawn(tmp_path: Path, database: str) -> InProcessClient:
    """The standalone server in this process (tests/in_process.py)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = tokend_env(TOKEND_DATABASE_URL=database, HOME=str(home))
    client = await InProcessClient.start(tmp_path, env=env)
    await client.initialize()
    return client


async def spawn_process(tmp_path: Path, database: str) -> ProcessClient:
    """The real `tokend lsp --standalone` process, for the test that kills it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = tokend_env(TOKEND_DATABASE_URL=database, HOME=str(home))
    client = await ProcessClient.spawn("lsp", "--standalone", cwd=tmp_path, env=env)
    await client.initialize()
    return client


@pytest.fixture(scope="module")
def text() -> tuple[str, int]:
    body = big_python(200_000)  # under one piece of core.text_chunks
    return body, int(ctok.token_count(body, "3.0")) + BEYOND_CONTENT


async def test_a_big_claude_message_is_estimated_first_then_exact(
    tmp_path: Path, database: str, text: tuple[str, int]
) -> None:
    body, exact = text
    server = await spawn(tmp_path, database)
    try:
        sid = (await server.request("session/create", {"model": "claude-opus-4-6"}))["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": body}]}
        reply = await server.request("session/append", {"sessionId": sid, "message": message})
        # The reply carries the estimate: the exact count is not in it yet.
        assert reply["tokens"] != exact
        first = (await server.next_notification("budget/didChange"))["snapshot"]
        assert first["version"] == reply["version"] == 1
        assert messages_basis(first) == "estimate" and first["usedTokens"] == reply["tokens"]
        later = (await server.next_notification("budget/didChange", timeout=30))["snapshot"]
        assert later["version"] == 2
        assert (later["usedTokens"], messages_basis(later)) == (exact, "exact")
        snapshot = await server.request("budget/snapshot", {"sessionId": sid})
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
    finally:
        assert await server.shutdown() == 0

    again = await spawn(tmp_path, database)
    try:
        snapshot = await again.request("budget/snapshot", {"sessionId": sid})
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
        await again.request("session/reload", {"sessionId": sid})
        snapshot = await again.request("budget/snapshot", {"sessionId": sid})
        assert snapshot["usedTokens"] == exact
    finally:
        assert await again.shutdown() == 0


async def test_a_short_claude_message_is_exact_in_the_reply(tmp_path: Path, database: str) -> None:
    body = big_python(20_000)
    server = await spawn(tmp_path, database)
    try:
        sid = (await server.request("session/create", {"model": "claude-opus-4-6"}))["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": body}]}
        await server.request("session/append", {"sessionId": sid, "message": message})
        snapshot = await server.request("budget/snapshot", {"sessionId": sid})
        expected = int(ctok.token_count(body, "3.0")) + BEYOND_CONTENT
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (expected, "exact")
    finally:
        assert await server.shutdown() == 0


async def test_a_server_shut_down_before_the_count_lands_stores_it_first(
    tmp_path: Path, database: str, text: tuple[str, int]
) -> None:
    body, exact = text
    server = await spawn(tmp_path, database)
    try:
        sid = (await server.request("session/create", {"model": "claude-opus-4-6"}))["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": body}]}
        reply = await server.request("session/append", {"sessionId": sid, "message": message})
        assert reply["tokens"] != exact
    finally:
        assert await server.shutdown() == 0  # at once: the exact count may not have landed
    again = await spawn(tmp_path, database)
    try:
        snapshot = await again.request("budget/snapshot", {"sessionId": sid})
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
    finally:
        assert await again.shutdown() == 0


async def test_a_server_killed_before_the_count_lands_counts_it_off_the_loop_when_it_loads(
    tmp_path: Path,
    database: str,
) -> None:
    """Found: a daemon killed (-9) before the exact count landed kept the estimate, and the
    breakdown said `exact`; then the next load counted it on the event loop (seconds of ctok's
    rules before anything else was served). Now the load shows the estimate, labelled so, and the
    exact count lands afterwards, counted off the loop, as an append's does."""
    body = big_python(2_000_000)  # a few seconds of exact counting: the kill comes first
    exact = int(ctok.token_count(body, "3.0")) + BEYOND_CONTENT
    server = await spawn_process(tmp_path, database)
    try:
        sid = (await server.request("session/create", {"model": "claude-opus-4-6"}))["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": body}]}
        reply = await server.request("session/append", {"sessionId": sid, "message": message})
        estimate = reply["tokens"]
        assert abs(estimate - exact) > 1_000  # the estimate
    finally:
        server.proc.kill()  # SIGKILL: no shutdown, nothing finished
        await server.proc.wait()
        await server.close()
    again = await spawn(tmp_path, database)
    try:
        first = await again.request("budget/snapshot", {"sessionId": sid})
        assert (first["usedTokens"], messages_basis(first)) == (estimate, "estimate")
        deadline = asyncio.get_running_loop().time() + 120
        snapshot = first
        while messages_basis(snapshot) == "estimate":
            assert asyncio.get_running_loop().time() < deadline, "the exact count never landed"
            await asyncio.sleep(0.2)
            snapshot = await again.request("budget/snapshot", {"sessionId": sid})
        # Exactly ctok's count: the text is over one piece of core.text_chunks, and its parts
        # now add up to the whole's count.
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
    finally:
        assert await again.shutdown() == 0
    third = await spawn(tmp_path, database)  # the exact count was stored
    try:
        snapshot = await third.request("budget/snapshot", {"sessionId": sid})
        assert (snapshot["usedTokens"], messages_basis(snapshot)) == (exact, "exact")
    finally:
        assert await third.shutdown() == 0
