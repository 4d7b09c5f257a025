-- Driven by tests/clients/test_clients_nvim_conformance.py: Neovim's own LSP client (no plugin) on
-- tokend. It opens folder A, sets `settings` (Neovim then sends didChangeConfiguration), adds
-- folder B with vim.lsp.buf.add_workspace_folder, edits a file of B without saving, asks
-- workspace/fileTokens for it, and writes what the client received to vim.g.result_path.
local A, B = vim.g.folder_a, vim.g.folder_b
local out = {}

local function finish()
  local file = io.open(vim.g.result_path, "w")
  file:write(vim.json.encode(out))
  file:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  vim.cmd.edit(A .. "/main.py")
  local id = vim.lsp.start({
    name = "tokend",
    cmd = vim.g.server_cmd,
    root_dir = A,
    workspace_folders = { { uri = vim.uri_from_fname(A), name = "a" } },
    settings = { tokend = { verbose = true } },
  })
  local client = assert(vim.lsp.get_client_by_id(id))
  assert(vim.wait(60000, function() return client.initialized end, 50), "no initialize reply")
  out.capabilities = client.server_capabilities

  vim.lsp.buf.add_workspace_folder(B)
  vim.cmd.edit(B .. "/lib.py")
  vim.lsp.buf_attach_client(0, id)
  local lines = {}
  for i = 1, 30 do
    lines[i] = "unsaved_" .. i .. " = 'typed in Neovim, not saved'"
  end
  vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
  out.buffer_bytes = #table.concat(lines, "\n") + 1
  vim.wait(500)
  local reply = client:request_sync(
    "workspace/fileTokens",
    { workspaceUri = vim.uri_from_fname(B), paths = { "lib.py" } },
    60000,
    0
  )
  out.reply = reply
  out.log_path = vim.lsp.get_log_path()
  client:stop()
  vim.wait(10000, function() return client:is_stopped() end, 50)
end)
out.ok, out.err = ok, err and tostring(err) or nil
finish()
