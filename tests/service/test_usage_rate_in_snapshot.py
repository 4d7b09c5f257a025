"""The snapshot carries the daemon's rate headroom when [rate] tpm_limit is set."""

from __future__ import annotations

from tests.appending import append
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_app


def test_a_reply_moves_the_rate_headroom_in_the_snapshot(tmp_path, isolated_dirs):
    config = isolated_dirs / "xdg_config_home" / "tokend"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[rate]\ntpm_limit = 10000\n")
    app = open_app(None, f"sqlite:///{tmp_path}/r.sqlite3")
    service = app.service
    sid = service.sessions.create_session("gpt-4o").id
    append(service, sid, "user", [TextPart("hi")])
    _, snap = append(
        service,
        sid,
        "assistant",
        [TextPart("hello")],
        usage=Usage(input_tokens=1200, output_tokens=300),
    )
    assert snap.rate is not None
    assert snap.rate.tokens_per_minute == 1500 and snap.rate.headroom_tokens == 8500
    app.close()


def test_without_a_limit_the_snapshot_has_none(tmp_path):
    app = open_app(None, f"sqlite:///{tmp_path}/r.sqlite3")
    service = app.service
    sid = service.sessions.create_session("gpt-4o").id
    _, snap = append(service, sid, "user", [TextPart("hi")])
    assert snap.rate is None
    app.close()
