-- Differences between the Neovim versions kebab supports (0.10 and 0.11+).
--
-- 0.11 turned the LSP client's functions into methods (`client:request(...)`) and deprecated the
-- old field functions; 0.10 only has the field functions (`client.request(...)`), which take no
-- self. Everything in kebab calls the client through here.

local M = {}

M.has_011 = vim.fn.has("nvim-0.11") == 1
M.supported = vim.fn.has("nvim-0.10") == 1

local function call(client, name, ...)
  if M.has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- @return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  return call(client, "request", method, params, handler, bufnr)
end

--- @return {err: table?, result: any}? response, string? err
function M.request_sync(client, method, params, timeout_ms, bufnr)
  return call(client, "request_sync", method, params, timeout_ms, bufnr)
end

function M.cancel_request(client, id)
  return call(client, "cancel_request", id)
end

function M.is_stopped(client)
  return call(client, "is_stopped")
end

--- The client's position encoding ("utf-8", "utf-16", "utf-32").
function M.encoding(client)
  return client.offset_encoding or "utf-16"
end

return M
