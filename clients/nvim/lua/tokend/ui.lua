-- :TokendCompact, :TokendContext (a floating window with the breakdown as bars),
-- :TokendSessions, :TokendFollow.
local client = require("tokend.client")
local statusline = require("tokend.statusline")

local M = {}
local BAR = 30

local function notify(text, level)
  vim.notify("tokend: " .. text, level or vim.log.levels.INFO)
end

local function thousands(n)
  local s = tostring(n):reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (s:gsub("^,", ""))
end

---(category, tokens) rows that add up to the window: the breakdown, free space, the
---autocompact buffer and the output reserve (as `tokend context` shows them).
---@param s tokend.Snapshot
function M.rows(s)
  local rows = {}
  for _, item in ipairs(s.breakdown) do
    table.insert(rows, { item.category, item.tokens })
  end
  local reserve = math.min(s.maxOutputTokens, math.max(0, s.contextWindow - s.autocompactThreshold))
  local buffer = math.max(0, s.contextWindow - s.autocompactThreshold - reserve)
  local free = math.max(0, s.contextWindow - s.usedTokens - reserve - buffer)
  table.insert(rows, { "free space", free })
  table.insert(rows, { "autocompact buffer", buffer })
  table.insert(rows, { "output reserve", reserve })
  return rows
end

---The lines :TokendContext shows.
---@param s tokend.Snapshot
function M.context_lines(s)
  local lines = {
    string.format("%s  %s", s.model, statusline.gauge(s)),
    string.format(
      "%s / %s tokens · compacts at %s · $%.2f",
      thousands(s.usedTokens),
      thousands(s.contextWindow),
      thousands(s.autocompactThreshold),
      s.cost.totalUsd
    ),
    "",
  }
  for _, row in ipairs(M.rows(s)) do
    local share = row[2] / math.max(1, s.contextWindow)
    local cells = math.floor(share * BAR + 0.5)
    table.insert(
      lines,
      string.format(
        "%-19s %s%s %9s %5.1f%%",
        row[1],
        string.rep("█", cells),
        string.rep("·", BAR - cells),
        thousands(row[2]),
        100 * share
      )
    )
  end
  for _, warning in ipairs(s.warnings) do
    table.insert(lines, "warning: " .. warning)
  end
  return lines
end

function M.context()
  local s = client.state.snapshot
  if s == nil then
    return notify("no session yet", vim.log.levels.WARN)
  end
  local lines = M.context_lines(s)
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "tokend"
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width + 2,
    height = #lines,
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = "minimal",
    border = "rounded",
    title = " tokend context ",
  })
  vim.keymap.set("n", "q", function()
    pcall(vim.api.nvim_win_close, win, true)
  end, { buffer = buf })
  return win
end

function M.compact()
  local s = client.state.snapshot
  if s == nil then
    return notify("no session to compact", vim.log.levels.WARN)
  end
  client.request("session/compact", { sessionId = s.sessionId, strategy = "auto" }, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    ---@cast result tokend.CompactResult
    client.set_snapshot(result.snapshot)
    local details = {}
    for _, action in ipairs(result.actions) do
      table.insert(details, action.detail)
    end
    notify(
      string.format("%s -> %s tokens; %s", thousands(result.before), thousands(result.after), table.concat(details, "; "))
    )
  end)
end

function M.sessions()
  client.request("session/list", { workspaceUri = client.workspace_uri() }, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    ---@cast result tokend.SessionListResult
    if #result.sessions == 0 then
      return notify("no session in this workspace")
    end
    vim.ui.select(result.sessions, {
      prompt = "tokend session",
      format_item = function(item)
        return string.format(
          "%s  %s  %.0f%%  %s",
          item.title or item.sessionId,
          item.model,
          item.usedPercentage,
          item.updatedAt
        )
      end,
    }, function(choice)
      if choice then
        M.attach(choice.sessionId)
      end
    end)
  end)
end

---Follow session `id` instead of the current one.
---@param id string
function M.attach(id)
  local previous = client.state.snapshot
  client.request("session/attach", { sessionId = id }, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    client.set_snapshot(result)
    if previous and previous.sessionId ~= id then
      client.request("session/detach", { sessionId = previous.sessionId }, function() end)
    end
  end)
end

---:TokendFollow [claude-code|codex] [path]: the daemon follows an agent's transcript (with no
---path, every session in the agent's folder) and this editor shows its gauge.
function M.follow(agent, path)
  local params = { agent = agent or "claude-code" } -- the session's workspace: the agent's cwd
  if path and path ~= "" then
    params.path = vim.fn.fnamemodify(path, ":p")
  end
  client.request("follow/start", params, function(err, result)
    if err then
      return notify(err.message, vim.log.levels.ERROR)
    end
    ---@cast result tokend.Follower
    notify("following " .. result.path)
  end)
end

return M
