-- The gauge as a lualine component, on lualine's public contract for a function component:
--   sections = { lualine_x = { "tokend" } }                    (lua/lualine/components/tokend.lua)
--   sections = { lualine_x = { require("tokend").lualine() } } (the same, as an options table)
-- lualine calls `[1]` for the text (statusline text: its % doubled, as lualine's own
-- components do), `cond` to draw it only once tokend pushed a snapshot, and `color(section)` on
-- every refresh for the stage's colours (TokendGaugeOk/Warning/Error; the theme's for the rest).
local client = require("tokend.client")
local statusline = require("tokend.statusline")

local M = {}

---The gauge as statusline text: `tokend 86k/200k · 43%%`.
function M.text()
  return (statusline.statusline():gsub("%%", "%%%%"))
end

---Draw the component only once tokend pushed a snapshot.
function M.cond()
  return client.state.snapshot ~= nil
end

---@param n integer|nil
local function hex(n)
  return n and string.format("#%06x", n) or nil
end

---The stage's colours for lualine: its highlight group's fg and bg; lualine's theme gives
---what the group leaves unset (its bg, with the default links to Diagnostic*).
---@return {fg: string|nil, bg: string|nil}|nil
function M.color()
  local s = client.state.snapshot
  if s == nil then
    return nil
  end
  local hl = vim.api.nvim_get_hl(0, { name = statusline.group(s.usedPercentage), link = false })
  return { fg = hex(hl.fg), bg = hex(hl.bg) }
end

---The component's options table: `[1]`, `cond` and `color`, under the caller's own options
---(lualine's `padding`, `fmt`, `on_click`, or another `color`...).
---@param opts table|nil
function M.component(opts)
  local component = vim.tbl_extend("keep", opts or {}, { cond = M.cond, color = M.color })
  component[1] = M.text
  return component
end

-- lualine redraws on a timer (1 s by default) and on editor events: ask it to redraw now,
-- when tokend pushes a new snapshot.
client.on_change(function()
  if package.loaded["lualine"] then
    require("lualine").refresh({ place = { "statusline" } })
  end
end)

return M
