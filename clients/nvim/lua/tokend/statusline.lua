-- The gauge for any statusline: a string made from the last pushed snapshot, no I/O.
local client = require("tokend.client")

local M = {}

M.config = {
  warning_percent = 70, -- TokendGaugeWarning from here
  error_percent = 90, -- TokendGaugeError from here
  icon = "tokend",
}

---86012 -> "86k", 1000000 -> "1M".
---@param tokens integer
function M.short(tokens)
  if tokens >= 1000000 then
    local text = string.format("%.1f", tokens / 1000000):gsub("%.0$", "")
    return text .. "M"
  end
  if tokens >= 1000 then
    return string.format("%.0fk", tokens / 1000)
  end
  return tostring(tokens)
end

---`86k/200k · 43%`, `~` before it while the figure is an estimate.
---@param s tokend.Snapshot
function M.gauge(s)
  local mark = s.estimated and "~" or ""
  return string.format(
    "%s%s/%s · %.0f%%",
    mark,
    M.short(s.usedTokens),
    M.short(s.contextWindow),
    s.usedPercentage
  )
end

---The highlight group of a percentage: TokendGaugeOk, TokendGaugeWarning, TokendGaugeError.
---@param percent number
function M.group(percent)
  if percent >= M.config.error_percent then
    return "TokendGaugeError"
  elseif percent >= M.config.warning_percent then
    return "TokendGaugeWarning"
  end
  return "TokendGaugeOk"
end

---The statusline text: "" before tokend pushed a snapshot. With `opts.highlight`, wrapped in
---the stage's highlight group (%#Group#...%*) for `set statusline=%!v:lua...`.
---@param opts {highlight: boolean}|nil
function M.statusline(opts)
  local s = client.state.snapshot
  if s == nil then
    return ""
  end
  local text = M.config.icon .. " " .. M.gauge(s)
  if opts and opts.highlight then -- for 'statusline' items evaluated as %!: % is doubled
    return "%#" .. M.group(s.usedPercentage) .. "#" .. text:gsub("%%", "%%%%") .. "%*"
  end
  return text
end

function M.define_highlights()
  vim.api.nvim_set_hl(0, "TokendGaugeOk", { link = "DiagnosticOk", default = true })
  vim.api.nvim_set_hl(0, "TokendGaugeWarning", { link = "DiagnosticWarn", default = true })
  vim.api.nvim_set_hl(0, "TokendGaugeError", { link = "DiagnosticError", default = true })
end

return M
