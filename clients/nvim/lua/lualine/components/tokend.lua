-- lualine's "tokend" component: sections = { lualine_x = { "tokend" } }, or with lualine's
-- options: { "tokend", padding = 0 }. lualine calls this module with the component's options;
-- it answers with one of lualine's own function components (tokend.lualine says what it draws).
local tokend = require("tokend.lualine")

return setmetatable({}, {
  __call = function(_, options)
    return require("lualine.components.special.function_component")(tokend.component(options))
  end,
})
