"""The lualine component in a real headless Neovim whose init.lua sets lualine up the way its
users do (`require("lualine").setup{ sections = { lualine_x = { ... } } }`), against a real
daemon: the statusline Neovim renders (nvim_eval_statusline of the window's 'statusline') must
show a second client's own `budget/snapshot`, in the colour the user gave the gauge's stage.

lualine is on none of the registries this project installs from, so CI cannot have it.
TOKEND_LUALINE_DIR names a lualine checkout (its repository's work tree): the test then runs
real lualine. Without it, the same init.lua and assertions run on tests/clients/lualine_harness,
a minimal `lualine` that loads and calls components as lualine's function-component contract
says (`cond`, the function, `fmt`, `color`, padding). The test prints which one ran.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.clients.test_clients_nvim import (
    WAIT_SECONDS,
    Nvim,
    _append,
    agent_session,
    expected_statusline,
)
from tests.daemon.real_daemon import real_daemons

HARNESS = Path(__file__).with_name("lualine_harness")

# the user's own colours for the gauge's stages (README: TokendGaugeOk from 0%, Warning from
# 70%, Error from 90%): the oracle for the colour lualine draws the gauge in
COLOURS = {
    "TokendGaugeOk": "#00af5f",
    "TokendGaugeWarning": "#d7af00",
    "TokendGaugeError": "#d70000",
}

LUALINE_LUA = """
-- lualine, set up as its users do, with tokend's gauge in lualine_x
vim.opt.rtp:prepend("{lualine}")
vim.o.termguicolors = true
{colours}
require("lualine").setup({{
  -- no redraw on lualine's timer: the gauge must follow what tokend pushes
  options = {{ refresh = {{ statusline = 3600000, tabline = 3600000, winbar = 3600000 }} }},
  sections = {{ lualine_x = {{ {component} }} }},
}})
"""

# the rendered statusline, each highlight with the colour Neovim resolves for its group
RENDERED = """
local win = vim.api.nvim_get_current_win()
local stl = vim.api.nvim_eval_statusline(vim.wo[win].statusline,
  { winid = win, highlights = true, maxwidth = 400 })
for _, h in ipairs(stl.highlights) do
  local fg = vim.api.nvim_get_hl(0, { name = h.group, link = false }).fg
  h.fg = fg and string.format("#%06x", fg) or ""
end
return vim.json.encode(stl)
"""


def lualine() -> tuple[Path, str]:
    """Where `lualine` comes from: TOKEND_LUALINE_DIR's checkout, else the harness."""
    given = os.environ.get("TOKEND_LUALINE_DIR")
    if not given:
        return HARNESS, "the lualine harness (TOKEND_LUALINE_DIR names no lualine checkout)"
    checkout = Path(given)
    if not (checkout / "lua" / "lualine.lua").is_file():
        pytest.fail(f"TOKEND_LUALINE_DIR={given} is no lualine checkout (no lua/lualine.lua)")
    return checkout, f"real lualine from TOKEND_LUALINE_DIR={given}"


def stage(snapshot: dict[str, Any]) -> str:
    """The stage's highlight group, by the README's default thresholds (70% and 90%)."""
    if snapshot["usedPercentage"] >= 90:
        return "TokendGaugeError"
    if snapshot["usedPercentage"] >= 70:
        return "TokendGaugeWarning"
    return "TokendGaugeOk"


def shown(nvim: Nvim, want: str) -> tuple[str, str]:
    """The rendered statusline, and the colour of the highlight `want` starts in ("" if absent)."""
    code = RENDERED.replace("'", "''").replace("\n", " ")
    stl = json.loads(nvim.expr(f"luaeval('(function() {code} end)()')"))
    at = stl["str"].encode().find(want.encode())
    if at < 0:
        return stl["str"], ""
    colours = [h["fg"] for h in stl["highlights"] if h["start"] <= at]
    return stl["str"], colours[-1] if colours else ""


def wait_shown(nvim: Nvim, snapshot: dict[str, Any]) -> None:
    """Wait until the statusline shows `snapshot`'s gauge once, in its stage's colour."""
    want, colour = expected_statusline(snapshot), COLOURS[stage(snapshot)]
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        text, fg = shown(nvim, want)
        if (text.count(want), fg) == (1, colour) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    messages = nvim.expr("execute('messages')")
    assert (text.count(want), fg) == (1, colour), f"{text!r} in {fg!r}; messages: {messages}"


@pytest.mark.parametrize("component", ['"tokend"', 'require("tokend").lualine()'])
def test_lualine_shows_a_second_clients_snapshot_in_its_stages_colour(
    component, monkeypatch, tmp_path
):
    checkout, which = lualine()
    print(f"lualine: {which}")
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        workspace = tmp_path / "app"
        workspace.mkdir()
        # no automatic compaction: the agent fills the session past 90%
        (workspace / ".tokend.toml").write_text("[compaction]\nauto = false\n")
        agent, sid = agent_session(
            workspace, "make the build pass", model="gpt-4o", contextWindow=50_000
        )
        colours = "\n".join(
            f'vim.api.nvim_set_hl(0, "{group}", {{ fg = "{fg}" }})' for group, fg in COLOURS.items()
        )
        init = LUALINE_LUA.format(lualine=checkout, colours=colours, component=component)
        nvim = Nvim(workspace, daemons.base / "nvim.sock", extra=init)
        try:
            snapshot = agent.result("budget/snapshot", {"sessionId": sid})
            wait_shown(nvim, snapshot)
            for limit, group in ((70, "TokendGaugeWarning"), (90, "TokendGaugeError")):
                while snapshot["usedPercentage"] < limit:  # steps of about 3%
                    text = "the build log says warning " * 300
                    _append(agent, sid, "user", {"type": "text", "text": text})
                    snapshot = agent.result("budget/snapshot", {"sessionId": sid})
                assert stage(snapshot) == group, snapshot["usedPercentage"]
                wait_shown(nvim, snapshot)
        finally:
            nvim.close()
