-- kebab's floating windows: the answer of `:KebabAsk` (streamed, then final with its sources)
-- and the index state of `:KebabStatus`. Each is a scratch buffer (filetype markdown) in a
-- centred float; `q` closes it and `<CR>` on a source line opens the cited lines.

local M = {}

local api = vim.api

M.options = { width = 88, max_height = 0.7, border = "rounded" }

local REFUSALS = {
  no_chunks = "nothing is indexed to answer from",
  score_gate = "no passage in the notes is close enough to the question",
  llm_self_judge = "the notes do not hold enough evidence for an answer",
  cancelled = "the answer was cancelled",
  llm_error = "the model failed",
}

-- a panel: one float over one scratch buffer ------------------------------------------------

local Panel = {}
Panel.__index = Panel

--- @param title string
--- @param on_close? fun() called once when the panel's buffer goes away
function M.panel(title, on_close)
  local self = setmetatable({ title = title, links = {}, on_close = on_close }, Panel)
  local from = api.nvim_get_current_win()
  self.origin_win = vim.w[from].kebab_origin or from -- opened from another panel: its origin
  self.buf = api.nvim_create_buf(false, true)
  local bo = vim.bo[self.buf]
  bo.bufhidden = "wipe"
  bo.swapfile = false
  bo.filetype = "markdown"
  bo.modifiable = false
  local width, height = M.size({ "" })
  local cfg = vim.tbl_extend("force", M.geometry(width, height), {
    relative = "editor",
    style = "minimal",
    border = M.options.border,
  })
  if M.bordered() then -- a title or footer needs a border
    cfg.title, cfg.title_pos = " " .. title .. " ", "center"
  end
  self.win = api.nvim_open_win(self.buf, true, cfg)
  vim.w[self.win].kebab_origin = self.origin_win
  local wo = vim.wo[self.win]
  wo.wrap = true
  wo.linebreak = true
  wo.conceallevel = 2
  wo.cursorline = true
  pcall(vim.treesitter.start, self.buf, "markdown")
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = self.buf, nowait = true, silent = true, desc = desc })
  end
  map("q", function()
    self:close()
  end, "kebab: close")
  map("<CR>", function()
    self:open_link()
  end, "kebab: open the source under the cursor")
  api.nvim_create_autocmd("BufWipeout", {
    buffer = self.buf,
    once = true,
    callback = function()
      self.closed = true
      if self.on_close then
        self.on_close()
      end
    end,
  })
  return self
end

function Panel:valid()
  return not self.closed and api.nvim_buf_is_valid(self.buf)
end

--- Replace the panel's text. `links` maps a 1-based line to {path, line}; `follow` keeps the
--- cursor on the last line (streaming), otherwise it goes to the top.
function Panel:set(lines, links, footer, follow)
  if not self:valid() then
    return
  end
  self.links = links or {}
  vim.bo[self.buf].modifiable = true
  api.nvim_buf_set_lines(self.buf, 0, -1, false, lines)
  vim.bo[self.buf].modifiable = false
  if api.nvim_win_is_valid(self.win) then
    local width, height = M.size(lines)
    local cfg = vim.tbl_extend("force", M.geometry(width, height), { relative = "editor" })
    if footer and M.bordered() then
      cfg.footer = " " .. footer .. " "
      cfg.footer_pos = "right"
    end
    api.nvim_win_set_config(self.win, cfg)
    api.nvim_win_set_cursor(self.win, { follow and #lines or 1, 0 })
  end
end

function Panel:lines()
  if not self:valid() then
    return {}
  end
  return api.nvim_buf_get_lines(self.buf, 0, -1, false)
end

function Panel:close()
  if self.win and api.nvim_win_is_valid(self.win) then
    api.nvim_win_close(self.win, true)
  end
  if api.nvim_buf_is_valid(self.buf) then
    api.nvim_buf_delete(self.buf, { force = true })
  end
end

--- `<CR>`: open the source on the cursor's line in the window the panel was opened from.
function Panel:open_link(lnum)
  lnum = lnum or api.nvim_win_get_cursor(self.win)[1]
  local link = self.links[lnum]
  if not link then
    return false
  end
  local target = self.origin_win
  self:close()
  if target and api.nvim_win_is_valid(target) then
    api.nvim_set_current_win(target)
  end
  vim.cmd.edit(vim.fn.fnameescape(link.path))
  local last = api.nvim_buf_line_count(0)
  api.nvim_win_set_cursor(0, { math.min(math.max(link.line, 1), last), 0 })
  vim.cmd("normal! zz")
  return true
end

function M.bordered()
  local border = M.options.border
  return border ~= nil and border ~= "none" and border ~= ""
end

function M.size(lines)
  local width = math.max(20, math.min(M.options.width, vim.o.columns - 4))
  local rows = 0
  for _, line in ipairs(lines) do
    rows = rows + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
  end
  local cap = math.max(3, math.floor((vim.o.lines - 4) * M.options.max_height))
  return width, math.max(1, math.min(rows, cap))
end

function M.geometry(width, height)
  return {
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
  }
end

-- the answer ----------------------------------------------------------------------------------

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

local function append(out, text)
  for _, line in ipairs(split(text)) do
    out[#out + 1] = line
  end
end

local function trim_blank(lines)
  while #lines > 0 and lines[#lines]:match("^%s*$") do
    lines[#lines] = nil
  end
  while #lines > 0 and lines[1]:match("^%s*$") do
    table.remove(lines, 1)
  end
  return lines
end

--- (1-based first line, last line) of a citation or hit.
function M.span(c)
  if c.start_line then
    return c.start_line, c.end_line or c.start_line
  end
  local r = c.range or { start = { line = 0 }, ["end"] = { line = 0, character = 0 } }
  local last = r["end"].character == 0 and r["end"].line or r["end"].line + 1
  return r.start.line + 1, math.max(last, r.start.line + 1)
end

--- A citation's file on disk.
function M.file_of(c, root)
  if c.uri and c.uri ~= "" then
    return vim.uri_to_fname(c.uri)
  end
  return root and (root .. "/" .. c.path) or c.path
end

--- The answer's markdown split into its body and its footnote definitions' labels by the
--- content hash they record (`"kb:<hash>"`), so sources can show the same labels.
function M.split_markdown(markdown)
  local body, labels = {}, {}
  for _, line in ipairs(split(markdown)) do
    local label = line:match("^%[%^([^%]%s]+)%]:")
    if label then
      local hash = line:match('"kb:(%x+)"')
      if hash then
        labels[hash] = label
      end
    else
      body[#body + 1] = line
    end
  end
  return trim_blank(body), labels
end

local function source_line(c, label)
  local first, last = M.span(c)
  local heading = table.concat(c.heading_path or {}, " › ")
  local where = ("%s:%d-%d"):format(c.path or "?", first, last)
  local line = label and ("[^%s] %s"):format(label, where) or ("- " .. where)
  if heading ~= "" then
    line = line .. "  " .. heading
  end
  return line
end

local function list_sources(out, links, citations, labels, root)
  for _, c in ipairs(citations) do
    local label
    if labels then
      label = labels[(c.content_hash or ""):sub(1, 12)] or ("#" .. tostring(c.marker or "?"))
    end
    out[#out + 1] = source_line(c, label)
    links[#out] = { path = M.file_of(c, root), line = (M.span(c)) }
  end
end

local function elapsed(state)
  return ("%.1f s"):format((vim.uv.hrtime() - state.started) / 1e9)
end

--- The lines, links and footer of an ask in its current state.
function M.answer_view(state)
  local out, links = {}, {}
  for _, line in ipairs(split(state.question)) do
    out[#out + 1] = "> " .. line
  end
  out[#out + 1] = ""
  local footer
  if state.status == "running" then
    if state.text == "" then
      out[#out + 1] = "_" .. (state.phase or "searching the notes") .. " …_"
    else
      append(out, state.text)
    end
    footer = "answering… · <C-c> cancel · q close"
  elseif state.status == "done" then
    local r = state.result
    for _, c in ipairs(r.conflicts or {}) do -- shown before the answer, as in every client
      out[#out + 1] = ("**⚠ Notes disagree:** [#%d] %s vs [#%d] %s — %s"):format(
        c.a, c.a_source or "", c.b, c.b_source or "", c.detail or "")
      out[#out + 1] = ""
    end
    if r.grounded then
      local body, labels = M.split_markdown(r.markdown or r.answer or "")
      vim.list_extend(out, body)
      out[#out + 1] = ""
      out[#out + 1] = "## Sources"
      out[#out + 1] = ""
      list_sources(out, links, r.citations or {}, labels, state.root)
      local n = #(r.citations or {})
      footer = ("%d source%s · %s · %s · <CR> open · q close"):format(
        n, n == 1 and "" or "s", elapsed(state), (r.model or {}).backend or "?")
    else
      local reason = r.refusal_reason
      if type(reason) ~= "string" then
        reason = "not_answered"
      end
      local said = type(r.answer) == "string" and vim.trim(r.answer) or ""
      -- in words: the code (`score_gate`…) is for tools, and stays in answer.v1
      out[#out + 1] = ("**Not answered.** %s"):format(
        said ~= "" and said or (REFUSALS[reason] or "no answer"))
      if type(r.error) == "string" and r.error ~= "" then
        out[#out + 1] = ""
        out[#out + 1] = "Error: " .. r.error
      end
      if r.candidates and #r.candidates > 0 then
        out[#out + 1] = ""
        out[#out + 1] = "## Nearest passages"
        out[#out + 1] = ""
        list_sources(out, links, r.candidates, nil, state.root)
      end
      footer = "not answered · q close"
    end
  elseif state.status == "cancelled" then
    if state.text ~= "" then
      append(out, state.text)
      out[#out + 1] = ""
    end
    out[#out + 1] = "**Cancelled.** The answer stopped here."
    footer = "cancelled · q close"
  else
    if state.text ~= "" then
      append(out, state.text)
      out[#out + 1] = ""
    end
    out[#out + 1] = "**kebab/ask failed:** " .. tostring(state.error or "unknown error")
    footer = "error · q close"
  end
  return out, links, footer
end

function M.render_answer(state)
  if not state.panel or not state.panel:valid() then
    return
  end
  local lines, links, footer = M.answer_view(state)
  state.panel:set(lines, links, footer, state.status == "running")
end

-- the status ----------------------------------------------------------------------------------

local function scalar(v)
  if type(v) == "table" then
    return vim.json.encode(v)
  end
  return tostring(v)
end

function M.status_view(s)
  local out = {
    "# kebab",
    "",
    ("**%s** · %s files · %s chunks"):format(s.state or "?", s.files or 0, s.chunks or 0),
  }
  for _, f in ipairs(s.folders or {}) do
    out[#out + 1] = ""
    out[#out + 1] = "## " .. (f.root or f.uri or "?")
    out[#out + 1] = ""
    local p = f.progress or {}
    local state = f.state or "?"
    if state == "indexing" and (p.total or 0) > 0 then
      state = ("%s (%s %d/%d)"):format(state, p.phase or "", p.done or 0, p.total or 0)
    end
    out[#out + 1] = "- state: " .. state
    if f.error ~= nil and f.error ~= vim.NIL then
      out[#out + 1] = "- error: " .. scalar(f.error)
    end
    if f.files then
      out[#out + 1] = ("- files: %s · chunks: %s · vectors: %s (%s pending)"):format(
        f.files, f.chunks or 0, f.vectors or 0, f.pending_vectors or 0)
    end
    if type(f.llm) == "table" then
      local endpoint = f.llm.endpoint
      out[#out + 1] = ("- llm: %s %s%s"):format(f.llm.backend or "?", f.llm.id or "",
        (endpoint and endpoint ~= vim.NIL) and (" at " .. endpoint) or "")
    end
    if type(f.embedding) == "table" then
      out[#out + 1] = ("- embedding: %s %s (%s-d)"):format(
        f.embedding.backend or "?", f.embedding.id or "", f.embedding.dim or "?")
    end
    if f.embedding_error ~= nil and f.embedding_error ~= vim.NIL then
      out[#out + 1] = "- embedding error: " .. scalar(f.embedding_error)
    end
    if f.index_dir then
      out[#out + 1] = "- index: " .. f.index_dir
    end
    local skipped = f.skipped or {}
    if #skipped > 0 then
      out[#out + 1] = ("- skipped %d file%s:"):format(#skipped, #skipped == 1 and "" or "s")
      for _, item in ipairs(skipped) do
        out[#out + 1] = ("  - %s: %s"):format(item.path or "?", item.reason or "")
      end
    end
  end
  return out
end

function M.show_status(s)
  local panel = M.panel("kebab status")
  panel:set(M.status_view(s), {}, "q close", false)
  return panel
end

return M
