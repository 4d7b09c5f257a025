-- The connection to tokend: one LSP client started with vim.lsp.start, the last snapshot the
-- daemon pushed, and one request helper that takes a callback or, inside a coroutine, waits.
local M = {}

---@type table
M.config = {
  cmd = { "tokend", "lsp" },
  session = "active", -- or a session id
  root_dir = nil, -- default: the current directory
}

---@class tokend.State
---@field client_id integer|nil
---@field snapshot tokend.Snapshot|nil the last budget/didChange or snapshot reply
---@field last_compaction tokend.SessionDidCompactParams|nil
M.state = { client_id = nil, snapshot = nil, last_compaction = nil }

local listeners = {} ---@type fun(snapshot: tokend.Snapshot)[]

---Call `fn` after each new snapshot (on the main loop).
function M.on_change(fn)
  table.insert(listeners, fn)
end

---@param snapshot tokend.Snapshot
function M.set_snapshot(snapshot)
  M.state.snapshot = snapshot
  for _, fn in ipairs(listeners) do
    pcall(fn, snapshot)
  end
  pcall(vim.cmd, "redrawstatus")
end

local handlers = {
  ---@param params tokend.BudgetDidChangeParams
  ["budget/didChange"] = function(_, params)
    local current = M.state.snapshot
    if current == nil or current.sessionId == params.sessionId then
      M.set_snapshot(params.snapshot)
    end
  end,
  ---@param params tokend.SessionDidCompactParams
  ["session/didCompact"] = function(_, params)
    M.state.last_compaction = params
  end,
}

local new_api = vim.fn.has("nvim-0.11") == 1 -- client:method() rather than client.method()

---The running tokend client of `root`, if any.
---@param root string
---@return integer|nil
local function running(root)
  for _, c in ipairs(vim.lsp.get_clients({ name = "tokend" })) do
    local stopped = new_api and c:is_stopped() or (not new_api and c.is_stopped())
    if c.config.root_dir == root and not stopped then
      return c.id
    end
  end
  return nil
end

---Attach buffer `buf` once it is loaded: at startup (setup() in init.lua) no buffer is yet,
---and Neovim 0.11's vim.lsp.start then returns no id although it started the client.
local function attach_when_loaded(id, buf)
  if vim.api.nvim_buf_is_loaded(buf) then
    vim.lsp.buf_attach_client(buf, id)
    return
  end
  vim.api.nvim_create_autocmd({ "VimEnter", "BufEnter" }, {
    group = vim.api.nvim_create_augroup("tokend.attach", { clear = true }),
    once = true,
    callback = function(args)
      if vim.lsp.get_client_by_id(id) and vim.api.nvim_buf_is_loaded(args.buf) then
        vim.lsp.buf_attach_client(args.buf, id)
      end
    end,
  })
end

---Start tokend (or reuse the running client) and attach the current buffer. Works whenever it
---is called: from init.lua at startup, lazily, or again.
---@return integer|nil client_id
function M.start()
  local root = M.config.root_dir or vim.fn.getcwd()
  local config = {
    name = "tokend",
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = { session = M.config.session },
    handlers = handlers,
  }
  local id
  if new_api then
    id = vim.lsp.start(config, { attach = false })
  else
    id = vim.lsp.start(config)
  end
  id = id or running(root)
  M.state.client_id = id
  if id then
    attach_when_loaded(id, vim.api.nvim_get_current_buf())
  end
  return id
end

---@return vim.lsp.Client|nil
function M.get()
  local c = M.state.client_id and vim.lsp.get_client_by_id(M.state.client_id)
  if c then
    return c
  end
  -- a client started some other way (vim.lsp.enable, an older setup()): use it
  local id = running(M.config.root_dir or vim.fn.getcwd())
  M.state.client_id = id or M.state.client_id
  return id and vim.lsp.get_client_by_id(id) or nil
end

---Send `method`; `callback(err, result)` gets the reply. Without a callback, inside a
---coroutine, wait for the reply and return `err, result`.
---@param method tokend.Method
---@param params table|nil
---@param callback fun(err: table|nil, result: any)|nil
function M.request(method, params, callback)
  local client = M.get()
  if client == nil then
    local err = { code = -32603, message = "tokend is not running: call require('tokend').setup()" }
    if callback then
      return callback(err, nil)
    end
    return err, nil
  end
  local co = coroutine.running()
  if callback == nil and co == nil then
    error("tokend.request: pass a callback, or call it from a coroutine")
  end
  local function handler(err, result)
    if callback then
      callback(err, result)
    else
      coroutine.resume(co, err, result)
    end
  end
  if new_api then
    client:request(method, params or vim.NIL, handler)
  else
    client.request(method, params or vim.NIL, handler)
  end
  if callback == nil then
    return coroutine.yield()
  end
end

---The workspace URI sessions of this editor are filed under.
function M.workspace_uri()
  return vim.uri_from_fname(M.config.root_dir or vim.fn.getcwd())
end

return M
