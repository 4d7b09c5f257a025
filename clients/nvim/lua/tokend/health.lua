-- :checkhealth tokend: the binary, the daemon, the versions.
local client = require("tokend.client")

local M = {}

function M.check()
  local health = vim.health
  health.start("tokend")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or later is needed")
  end

  local cmd = client.config.cmd
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    health.error(
      "`" .. exe .. "` is not executable",
      { "pip install tokend (or pipx install tokend)", "or set cmd in require('tokend').setup{}" }
    )
    return
  end
  health.ok("binary: " .. vim.fn.exepath(exe))
  local version_cmd = vim.list_extend(vim.list_slice(cmd, 1, #cmd - 1), { "--version" })
  local version = vim.fn.system(version_cmd)
  if vim.v.shell_error == 0 then
    health.ok("version: " .. vim.trim(version))
  else
    health.warn("`" .. table.concat(version_cmd, " ") .. "` failed: " .. vim.trim(version))
  end

  local lsp = client.get()
  if lsp == nil or lsp:is_stopped() then
    health.error("no tokend client: call require('tokend').setup() (it starts `tokend lsp`)")
    return
  end
  local reply = lsp:request_sync("daemon/status", vim.NIL, 5000)
  if reply == nil or reply.err then
    health.error("the daemon does not answer: " .. vim.inspect(reply and reply.err))
    return
  end
  local status = reply.result
  health.ok(
    string.format(
      "daemon reachable: tokend %s, pid %d, %d connections, %d sessions loaded",
      status.version,
      status.pid,
      #status.connections,
      #status.sessions
    )
  )
  local s = client.state.snapshot
  if s then
    health.ok(string.format("attached to session %s (%s)", s.sessionId, s.model))
  else
    health.info("no session attached yet (none in this workspace; :TokendSessions)")
  end
end

return M
