"""Settings that apply to all of a user's workspaces together are read from the user's
config.toml only: the daemon applies the user's value, so a workspace's .tokend.toml that sets
one is told so (a warning naming the file and the key) instead of being shown as applied."""

from __future__ import annotations

from pathlib import Path

from tests.appending import append
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_app

WORKSPACE_FILE = """idle_timeout_s = 5
[rate]
tpm_limit = 10
[spend]
session_usd = 2
user_daily_usd = 1
timezone = "UTC"
"""


def test_the_workspace_settings_agree_with_what_the_daemon_applies(
    tmp_path: Path, isolated_dirs: Path
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / ".tokend.toml").write_text(WORKSPACE_FILE)
    uri = workspace.as_uri()
    app = open_app(None, f"sqlite:///{tmp_path}/s.sqlite3")  # the usage monitor, as the daemon's
    service = app.service
    sid = service.sessions.create_session("gpt-4o", workspace_uri=uri).id
    append(service, sid, "user", [TextPart("hi")])
    _, snap = append(
        service,
        sid,
        "assistant",
        [TextPart("hello")],
        usage=Usage(input_tokens=1200, output_tokens=300),
    )
    assert snap.rate is None  # the daemon's rate limit is the user's: none configured
    applied = service.models.config_for(uri)
    assert applied.rate.tpm_limit is None
    assert (applied.spend.user_daily_usd, applied.spend.timezone) == (None, "local")
    assert applied.idle_timeout_s == 60
    assert applied.spend.session_usd == 2  # a session limit is the workspace's to set
    app.close()

    settings = WorkspaceSettings().for_workspace(uri)
    where = f"{workspace / '.tokend.toml'}: "
    assert sorted(settings.warnings) == sorted(
        [
            where + "idle_timeout_s is read from the user config only "
            "(the daemon's, one for every workspace); ignored",
            where + "[rate] is read from the user config only "
            "(the provider's limit, one for every workspace); ignored",
            where + "[spend] user_daily_usd is read from the user config only "
            "(it applies to all of the user's workspaces together); ignored",
            where + "[spend] timezone is read from the user config only "
            "(it applies to all of the user's workspaces together); ignored",
        ]
    )
    assert settings.origins == {"spend.session_usd": "workspace"}
