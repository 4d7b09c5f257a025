-- The harness's function component, called as lualine calls one: `options[1](self, is_focused)`
-- under pcall (an error draws nothing; a non-string is passed through tostring), drawn only
-- when `cond()` returns exactly true, `fmt(text, self)` applied, nothing drawn for "", one
-- space of padding either side, and `color`: a highlight group's name, {fg, bg}, or a function
-- of {section} returning either, called on every draw.
local Component = {}
Component.__index = Component

local count = 0

---@param options table
local function new(_, options)
  count = count + 1
  return setmetatable({ options = options, hl = "HarnessLualine" .. count }, Component)
end

---@return string|nil the %#Group# that starts the component
function Component:highlight()
  local color = self.options.color
  if type(color) == "function" then
    color = color({ section = self.options.self.section })
  end
  if type(color) == "string" then
    vim.api.nvim_set_hl(0, self.hl, { link = color })
  elseif type(color) == "table" then
    vim.api.nvim_set_hl(0, self.hl, { fg = color.fg, bg = color.bg })
  else
    return nil
  end
  return "%#" .. self.hl .. "#"
end

---@param default_highlight string the section's %#Group#
---@param is_focused boolean
function Component:draw(default_highlight, is_focused)
  local options = self.options
  if options.cond ~= nil and options.cond() ~= true then
    return ""
  end
  local ok, text = pcall(options[1], self, is_focused)
  if not ok then
    text = ""
  elseif type(text) ~= "string" then
    text = tostring(text)
  end
  if options.fmt then
    text = options.fmt(text, self)
  end
  if #text == 0 then
    return ""
  end
  text = " " .. text .. " "
  return (self:highlight() or default_highlight) .. text .. default_highlight
end

return setmetatable({}, { __call = new })
