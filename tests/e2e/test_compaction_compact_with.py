"""The snapshot's `compactWith` advice, end to end: `tokend lsp --standalone` over real pipes
with a real config file. Oracle: the provider documentation's list of models with a compaction
API (Anthropic's compaction API: Opus and Sonnet 4.6 and later; OpenAI's /responses/compact:
the Responses models), written here by hand, and the config file the test writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tokend.core.models.catalog import Catalog

DOCUMENTED = {
    "claude-opus-4-6": "provider",  # the compaction API's first models
    "claude-sonnet-4-6": "provider",
    "claude-opus-4-7": "provider",
    "claude-opus-4-5": "tokend",  # before the compaction API
    "claude-haiku-4-5": "tokend",
    "claude-sonnet-4-5-20250929": "tokend",
    "gpt-5": "provider",  # /responses/compact
    "o3": "provider",
    "gpt-3.5-turbo": "tokend",
    "deepseek-chat": "tokend",
}


async def snapshot_of(client: InProcessClient, model: str) -> dict[str, object]:
    created = await client.request("session/create", {"model": model})
    sid = created["sessionId"]
    message = {"role": "user", "parts": [{"type": "text", "text": "hello"}]}
    await client.request("session/append", {"sessionId": sid, "message": message})
    snapshot: dict[str, object] = await client.request("budget/snapshot", {"sessionId": sid})
    return snapshot


async def test_the_snapshot_advises_the_providers_own_compaction_where_the_model_has_one(
    isolated_dirs: Path, tmp_path: Path
) -> None:
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        '[models."gpt-4o"]\nprovider_compaction = false\n'  # overridden off
        '[models."claude-haiku-4-5"]\nprovider_compaction = true\n'  # overridden on
        '[models."my-local-model"]\ncontext_window = 32000\nmax_output_tokens = 4000\n'  # declared, no provider API
    )
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    client = await InProcessClient.start(cwd=tmp_path, env=env)
    await client.initialize()
    expected = {
        **DOCUMENTED,
        "gpt-4o": "tokend",
        "claude-haiku-4-5": "provider",
        "my-local-model": "tokend",
    }
    seen = {model: (await snapshot_of(client, model))["compactWith"] for model in expected}
    assert seen == expected
    assert await client.shutdown() == 0


@pytest.mark.parametrize(
    ("name", "table", "expected"),
    [
        ("claude-opus-5", {"context_window": 200_000}, True),  # a later Claude, declared
        ("claude-sonnet-4-5-x", {"context_window": 200_000}, False),
        ("gpt-5.9-preview", {"context_window": 400_000, "provider": "openai"}, True),
        ("gpt-5.9-preview", {"context_window": 400_000, "provider": "openrouter"}, False),
        ("llama-9", {"context_window": 8_000, "provider_compaction": True}, True),
    ],
)
def test_a_declared_model_gets_the_flag_from_its_name_unless_it_says(
    name: str, table: dict[str, object], expected: bool
) -> None:
    catalog = Catalog({}, [{name: table}])
    assert catalog.get(name).provider_compaction is expected
    assert catalog.warnings == ()
