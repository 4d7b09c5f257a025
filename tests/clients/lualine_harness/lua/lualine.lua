-- A minimal lualine for tests/clients/test_clients_nvim_lualine.py when no lualine checkout is given
-- (TOKEND_LUALINE_DIR): `setup{ sections = ... }` loads each component as lualine does (a
-- function, a table of options with the function first, or a name looked up as the module
-- lualine.components.NAME, which is called with the options) and renders the sections into
-- 'statusline' on setup and on `refresh()`, as lualine does with its timer off.
local M = {}

local ORDER = { "a", "b", "c", "x", "y", "z" }
local loaded = {} ---@type table<string, table[]>

---@param spec any a section's entry
---@param section string "a".."z"
local function load(spec, section)
  if type(spec) ~= "table" then
    spec = { spec }
  end
  local options = vim.tbl_extend("force", {}, spec, { self = { section = section } })
  if type(options[1]) == "string" then
    options.component_name = options[1]
    local component = require("lualine.components." .. options[1])
    if type(component) == "function" then
      options[1] = component
      return require("lualine.components.special.function_component")(options)
    end
    return component(options)
  end
  return require("lualine.components.special.function_component")(options)
end

local function render()
  local parts = {}
  for _, section in ipairs(ORDER) do
    if section == "x" then
      table.insert(parts, "%=")
    end
    for _, component in ipairs(loaded[section] or {}) do
      table.insert(parts, component:draw("%#StatusLine#", true))
    end
  end
  vim.o.statusline = table.concat(parts)
end

---@param config {sections: table<string, any[]>}
function M.setup(config)
  loaded = {}
  for name, entries in pairs(config.sections or {}) do
    local section = name:match("^lualine_(%a)$")
    loaded[section] = {}
    for _, spec in ipairs(entries) do
      table.insert(loaded[section], load(spec, section))
    end
  end
  render()
end

function M.refresh()
  render()
end

return M
