-- tokend for Neovim: the context-window gauge of your AI coding session, from the tokend daemon.
--   require("tokend").setup{}            start or attach (vim.lsp.start, cmd {"tokend", "lsp"})
--   require("tokend").statusline()       the gauge string for any statusline (no I/O)
--   require("tokend").lualine()          the gauge as a lualine component (or "tokend")
--   :TokendCompact :TokendContext :TokendSessions :TokendFollow, :checkhealth tokend
local client = require("tokend.client")
local statusline = require("tokend.statusline")
local ui = require("tokend.ui")

local M = {}

---@class tokend.Options
---@field cmd string[]|nil the server command (default {"tokend", "lsp"})
---@field session string|nil "active" (the workspace's newest session) or a session id
---@field root_dir string|nil the workspace folder (default: the current directory)
---@field warning_percent number|nil TokendGaugeWarning from this percentage (default 70)
---@field error_percent number|nil TokendGaugeError from this percentage (default 90)

---@param opts tokend.Options|nil
function M.setup(opts)
  opts = opts or {}
  for _, key in ipairs({ "cmd", "session", "root_dir" }) do
    if opts[key] ~= nil then
      client.config[key] = opts[key]
    end
  end
  for _, key in ipairs({ "warning_percent", "error_percent" }) do
    if opts[key] ~= nil then
      statusline.config[key] = opts[key]
    end
  end
  statusline.define_highlights()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("tokend.highlights", { clear = true }), -- once, if called twice
    callback = statusline.define_highlights,
  })
  local command = vim.api.nvim_create_user_command
  command("TokendCompact", ui.compact, { desc = "tokend: compact the session" })
  command("TokendContext", ui.context, { desc = "tokend: the context window, as bars" })
  command("TokendSessions", ui.sessions, { desc = "tokend: switch session" })
  command("TokendFollow", function(args)
    ui.follow(args.fargs[1], args.fargs[2])
  end, {
    nargs = "*",
    complete = function()
      return { "claude-code", "codex" }
    end,
    desc = "tokend: follow a Claude Code or Codex session",
  })
  return client.start()
end

M.statusline = statusline.statusline
---The gauge as a lualine component's options table: `lualine_x = { require("tokend").lualine() }`.
---@param opts table|nil lualine's options for it
function M.lualine(opts)
  return require("tokend.lualine").component(opts)
end
M.request = client.request
M.state = client.state

return M
