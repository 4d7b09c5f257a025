-- lualine component: sections = { lualine_x = { "tokend" } }
local statusline = require("tokend.statusline")
local client = require("tokend.client")

local component = require("lualine.component"):extend()

function component:update_status()
  return statusline.statusline()
end

function component:draw(default_highlight, is_focused)
  local s = client.state.snapshot
  if s then
    self.options.color = statusline.group(s.usedPercentage)
  end
  return component.super.draw(self, default_highlight, is_focused)
end

return component
