-- Starting `kebab serve` for Markdown notes: the workspace root of a note, the command for it,
-- and the two ways to start it (vim.lsp.config + vim.lsp.enable on 0.11+, vim.lsp.start from a
-- FileType autocommand on 0.10).

local M = {}

local api = vim.api

M.NAME = "kebab"
M.config = nil -- kebab's options, set by start_for_notes
M.handlers = {} -- the client's own handlers ($/progress)

--- The workspace root of a buffer: the nearest folder holding a root marker.
function M.root_dir(bufnr)
  local name = api.nvim_buf_get_name(bufnr or 0)
  if name == "" then
    return nil
  end
  local dir = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(name, ":p")))
  local found = vim.fs.find(M.config.root_markers, { upward = true, path = dir, limit = 1 })[1]
  return found and vim.fs.dirname(found) or nil
end

--- The command that starts the server for a workspace root.
function M.server_cmd(root)
  local cmd = M.config.cmd
  if type(cmd) == "function" then
    cmd = cmd(root)
  end
  if type(cmd) == "string" then
    cmd = vim.split(cmd, "%s+", { trimempty = true })
  end
  if type(cmd) == "table" and #cmd > 0 then
    return cmd
  end
  if root then
    for _, rel in ipairs({ "/.venv/bin/kebab", "/.venv/Scripts/kebab.exe" }) do
      if vim.fn.executable(root .. rel) == 1 then
        return { root .. rel, "serve" }
      end
    end
  end
  return { "kebab", "serve" }
end

local function base_config()
  return {
    name = M.NAME,
    init_options = M.config.init_options,
    settings = M.config.settings,
    handlers = M.handlers,
    on_attach = M.config.on_attach,
    capabilities = M.config.capabilities,
  }
end

--- Start (or reuse) the server for a buffer with vim.lsp.start (the 0.10 path).
function M.start(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local root = M.root_dir(bufnr)
  if not root then
    return nil
  end
  local config = base_config()
  config.cmd = M.server_cmd(root)
  config.cmd_cwd = root
  config.root_dir = root
  return vim.lsp.start(config, { bufnr = bufnr })
end

local function enable_011()
  local last_root
  vim.lsp.config(M.NAME, vim.tbl_extend("force", base_config(), {
    filetypes = M.config.filetypes,
    root_dir = function(bufnr, on_dir)
      local root = M.root_dir(bufnr)
      if root then
        last_root = root
        on_dir(root)
      end
    end,
    -- A function, so that the command can depend on the root (.venv/bin/kebab). Recent
    -- releases (0.11.4) pass the resolved config; early 0.11 ones only the dispatchers.
    cmd = function(dispatchers, config)
      config = config or {}
      local root = config.root_dir or last_root or vim.fn.getcwd()
      return vim.lsp.rpc.start(M.server_cmd(root), dispatchers, {
        cwd = config.cmd_cwd or root,
        env = config.cmd_env,
        detached = config.detached ~= false,
      })
    end,
  }))
  vim.lsp.enable(M.NAME)
end

local function wanted(buf)
  return api.nvim_buf_is_loaded(buf)
    and vim.bo[buf].buftype == ""
    and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype)
    and #vim.lsp.get_clients({ name = M.NAME, bufnr = buf }) == 0
end

--- Notes that were open before setup() get their server too. vim.lsp.enable starts servers
--- from FileType, and runs it again for open buffers only once VimEnter has passed (0.11.4);
--- setup() from lazy.nvim's `ft = "markdown"` during startup, or from `nvim -c … note.md`,
--- comes after the note's FileType and before VimEnter, so nothing would start until `:e`.
--- Running vim.lsp.enable's own FileType autocommand for those buffers starts them as it
--- would have; where that group is missing (a later Neovim), kebab starts them itself.
local function attach_open_buffers()
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if wanted(buf) then
      local ok = pcall(api.nvim_buf_call, buf, function()
        api.nvim_exec_autocmds("FileType", {
          group = "nvim.lsp.enable",
          pattern = vim.bo[buf].filetype,
          modeline = false,
        })
      end)
      if not ok then
        M.start(buf)
      end
    end
  end
end

local function enable_010(group)
  api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(ev)
      M.start(ev.buf)
    end,
  })
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.config.filetypes, vim.bo[buf].filetype) then
      M.start(buf)
    end
  end
end

--- The kebab client for a buffer: attached to it, else the first running one.
function M.client(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr })
  if attached[1] then
    return attached[1], true
  end
  local any = vim.lsp.get_clients({ name = M.NAME })
  return any[1], false
end

--- Start the server for every Markdown note, now and from now on.
function M.start_for_notes(config, handlers, group)
  M.config, M.handlers = config, handlers
  local use_enable = config.use_lsp_enable
  if use_enable == nil then
    use_enable = vim.fn.has("nvim-0.11") == 1 and vim.lsp.config ~= nil
  end
  if use_enable then
    enable_011()
    attach_open_buffers()
  else
    enable_010(group)
  end
end

return M
