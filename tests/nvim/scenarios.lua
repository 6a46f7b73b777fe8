-- Scenarios for tests/nvim/test_nvim_client.py, run in a headless Neovim:
--
--   nvim --headless -u NONE -i NONE -n --cmd "set rtp+=client-nvim" -c "luafile scenarios.lua"
--
-- with KBTEST_SCENARIO (which one), KBTEST_ROOT (the workspace copy), KBTEST_OUT
-- (the JSON file to write) and KBTEST_SETUP (JSON: the options for require("kebab").setup).
-- Every step runs under pcall; a failed step is recorded in `errors` and the others still run.
-- Neovim always quits at the end, having written what it found.

vim.cmd("filetype on")

local out = { errors = vim.empty_dict(), steps = {} }
local root = assert(os.getenv("KBTEST_ROOT"))
local QUESTION = "What time does the nightly backup job run?"
local events = {}

local function step(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  out.steps[#out.steps + 1] = name
  if not ok then
    out.errors[name] = tostring(err)
  end
  return ok
end

local function wait(ms, cond, what)
  if not vim.wait(ms, cond, 20) then
    error("timed out after " .. ms .. " ms waiting for " .. what, 2)
  end
end

local function finish()
  local f = assert(io.open(assert(os.getenv("KBTEST_OUT")), "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd("qa!")
end

local kebab = require("kebab")
local compat = require("kebab.compat")
local setup = vim.json.decode(os.getenv("KBTEST_SETUP") or "{}")
setup.on_event = function(event, data)
  local e = { event = event }
  if event == "chunk" then
    e.text = data.text
    e.lines = data.state.panel:lines() -- what the float shows right after this chunk
  elseif event == "result" then
    e.answer = data.answer.answer
  elseif event == "cancelled" then
    e.text = data.text
  end
  events[#events + 1] = e
end

local function client()
  return vim.lsp.get_clients({ name = "kebab" })[1]
end

local function request(method, params, bufnr)
  local r = compat.request_sync(client(), method, params, 10000, bufnr or 0)
  assert(r, method .. ": no response")
  assert(not r.err, method .. ": " .. vim.inspect(r.err))
  return r.result
end

--- Open a note and wait until its server is attached and the index is ready.
local function open_ready(rel)
  vim.cmd.edit(vim.fn.fnameescape(root .. "/" .. rel))
  wait(15000, function()
    return #vim.lsp.get_clients({ name = "kebab", bufnr = 0 }) > 0
  end, "the kebab client to attach")
  wait(30000, function()
    local s = request("kebab/status", {})
    for _, f in ipairs(s.folders) do
      if f.pending_vectors ~= 0 then
        return false
      end
    end
    return s.state == "ready"
  end, "the index to be ready")
end

local function ask(question)
  vim.cmd(question and ("KebabAsk " .. question) or "KebabAsk")
  local state = assert(kebab.current(), "KebabAsk started no ask")
  wait(20000, function()
    return state.status ~= "running"
  end, "the answer")
  return state
end

--- What an ask ended with.
local function outcome(state)
  local r = state.result or {}
  return {
    status = state.status,
    error = state.error,
    question = state.question,
    answer = r.answer,
    grounded = r.grounded,
    reason = r.refusal_reason,
    lines = state.panel:lines(),
  }
end

local function of(kind)
  local found = {}
  for _, e in ipairs(events) do
    if e.event == kind then
      found[#found + 1] = e
    end
  end
  return found
end

local function line_of(bufnr, pattern)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if line:find(pattern, 1, true) then
      return i, line
    end
  end
end

local S = {}

function S.ask()
  local note
  local progress = {} -- every $/progress that reached Neovim's own handler
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(ev)
      local p = ev.data.params
      progress[#progress + 1] = { token = p.token, kind = p.value.kind }
    end,
  })
  step("open", function()
    open_ready("inbox/questions.md")
    note = vim.api.nvim_get_current_buf()
  end)
  step("ask", function()
    local state = ask(QUESTION)
    out.ask = {
      status = state.status,
      error = state.error,
      token = state.token,
      chunks = vim.tbl_map(function(e)
        return e.text
      end, of("chunk")),
      shown = vim.tbl_map(function(e)
        return e.lines
      end, of("chunk")),
      results = #of("result"),
      answer = state.result and state.result.answer,
      markdown = state.result and state.result.markdown,
      citations = state.result and vim.tbl_map(function(c)
        return { path = c.path, start_line = c.start_line, end_line = c.end_line }
      end, state.result.citations),
      lines = state.panel:lines(),
      filetype = vim.bo[state.panel.buf].filetype,
      floating = vim.api.nvim_win_get_config(state.panel.win).relative ~= "",
    }
    out.progress = progress
  end)
  step("open_source", function()
    local state = kebab.current()
    local first
    for lnum in pairs(state.panel.links) do
      first = first and math.min(first, lnum) or lnum
    end
    assert(first, "no source line in the float")
    out.source_line = vim.api.nvim_buf_get_lines(state.panel.buf, first - 1, first, false)[1]
    vim.api.nvim_win_set_cursor(state.panel.win, { first, 0 })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
    out.opened = {
      file = vim.api.nvim_buf_get_name(0),
      line = vim.api.nvim_win_get_cursor(0)[1],
      float_closed = not vim.api.nvim_win_is_valid(state.panel.win),
    }
    vim.api.nvim_set_current_buf(note)
  end)
  step("refusal", function()
    local prompt
    vim.ui.input = function(opts, on_confirm) -- :KebabAsk with no question prompts for one
      prompt = opts.prompt
      on_confirm("Who won the 1998 football world cup in France?")
    end
    local state = ask(nil)
    out.refusal = vim.tbl_extend("force", outcome(state), {
      prompt = prompt,
      candidates = state.result and #(state.result.candidates or {}) or 0,
      links = vim.tbl_count(state.panel.links),
    })
    state.panel:close()
  end)
  step("status", function()
    local before = #of("status")
    vim.cmd("KebabStatus")
    wait(10000, function()
      return #of("status") > before
    end, "kebab/status")
    out.status_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    out.status_filetype = vim.bo.filetype
    vim.api.nvim_feedkeys("q", "mx", false)
    out.status_closed = vim.api.nvim_get_current_buf() == note
  end)
end

function S.cancel()
  step("open", function()
    open_ready("inbox/questions.md")
  end)
  step("cancel", function()
    vim.cmd("KebabAsk " .. QUESTION)
    local state = assert(kebab.current())
    wait(15000, function()
      return #state.chunks >= 2
    end, "two streamed chunks")
    vim.cmd("KebabCancel")
    out.cancel = {
      status = state.status,
      lines = state.panel:lines(),
      chunks_at_cancel = #state.chunks,
      text_at_cancel = state.text,
    }
    -- Neovim drops the response to a cancelled request: do not wait for it. Give stray
    -- progress a moment to arrive, then check that nothing changed the float.
    vim.wait(600)
    out.cancel.after = {
      status = state.status,
      lines = state.panel:lines(),
      chunks = #state.chunks,
      results = #of("result"),
      errors = #of("error"),
    }
  end)
  step("alive", function()
    local stopped = compat.is_stopped(client())
    local status = request("kebab/status", {}).state
    out.alive = vim.tbl_extend("force", outcome(ask(QUESTION)), {
      stopped = stopped,
      state = status,
    })
  end)
end

function S.insert()
  local note
  step("open", function()
    open_ready("inbox/questions.md")
    note = vim.api.nvim_get_current_buf()
  end)
  step("insert", function()
    local lnum = assert(line_of(note, QUESTION))
    vim.api.nvim_win_set_cursor(0, { lnum, 3 })
    vim.cmd("KebabInsert")
    wait(20000, function()
      return #of("inserted") > 0 and line_of(note, "[^kb-1]:") ~= nil
    end, "the answer in the note")
    out.question_line = lnum
    out.lines = vim.api.nvim_buf_get_lines(note, 0, -1, false)
    out.modified = vim.bo[note].modified
  end)
  step("hover", function()
    local lnum, line
    for i, l in ipairs(vim.api.nvim_buf_get_lines(note, 0, -1, false)) do
      if l:find("[^kb-1]", 1, true) and not l:find("^%[%^kb%-1%]:") then
        lnum, line = i, l
        break
      end
    end
    assert(lnum, "no [^kb-1] reference in the note")
    local col = line:find("[^kb-1]", 1, true) + 2 -- on "kb-1", 0-based
    vim.api.nvim_win_set_cursor(0, { lnum, col })
    local c = client()
    local params = vim.lsp.util.make_position_params(0, c.offset_encoding)
    local hover = request("textDocument/hover", params, note)
    out.hover = hover and hover.contents
    local def = request("textDocument/definition", params, note)
    out.definition = def
  end)
end

function S.thread()
  step("open", function()
    open_ready("ops/postgres.md")
  end)
  step("thread", function()
    local first = ask("How is Postgres set up on nas01?")
    first.panel:close()
    local follow = ask("and which port does it listen on?")
    out.follow = outcome(follow)
    follow.panel:close()
    vim.cmd("KebabNew")
    local fresh = ask("and which port does it listen on?")
    out.fresh = outcome(fresh)
    fresh.panel:close()
  end)
end

function S.legacy()
  step("open", function()
    open_ready("inbox/questions.md")
  end)
  step("legacy", function()
    local c = client()
    out.legacy = vim.tbl_extend("force", outcome(ask(QUESTION)), {
      enabled = vim.lsp.is_enabled and vim.lsp.is_enabled("kebab") or false,
      cmd = c.config.cmd,
      root = c.config.root_dir,
    })
  end)
end

local name = assert(os.getenv("KBTEST_SCENARIO"))
step("setup", function()
  kebab.setup(setup)
end)
if not out.errors.setup then
  step("scenario", assert(S[name], "no scenario " .. name))
end
out.messages = vim.api.nvim_exec2("messages", { output = true }).output
finish()
