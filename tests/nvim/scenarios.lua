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
-- what Neovim had before setup(): a note given on the command line is open already
out.before_setup = {
  vim_did_enter = vim.v.vim_did_enter,
  filetype = vim.bo.filetype,
  name = vim.api.nvim_buf_get_name(0),
}
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

--- Let every callback already queued with vim.schedule run: they run in order, so a marker
--- scheduled now runs after all of them.
local function flush_scheduled()
  local done = false
  vim.schedule(function()
    done = true
  end)
  wait(5000, function()
    return done
  end, "the callbacks queued with vim.schedule")
end

local function finish()
  local ok, text = pcall(vim.json.encode, out)
  if not ok then
    text = vim.json.encode({ errors = { finish = text }, steps = { "finish" }, messages = "" })
  end
  local f = io.open(assert(os.getenv("KBTEST_OUT")), "w")
  if f then
    f:write(text)
    f:close()
  end
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
  elseif event == "ask" then
    e.conversation = data.conversation
  elseif event == "message" then
    e.message, e.type, e.shown = data.message, data.type, data.shown
  elseif event == "related" then
    e.title, e.hits = data.title, data.hits
  elseif event == "linked" then
    e.applied, e.links = data.applied, data.links
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

--- Wait until the current buffer's server is attached and the index is ready.
local function ready()
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

--- Open a note and wait until its server is attached and the index is ready.
local function open_ready(rel)
  vim.cmd.edit(vim.fn.fnameescape(root .. "/" .. rel))
  ready()
end

local function ask(question, command)
  command = command or "KebabAsk"
  vim.cmd(question and (command .. " " .. question) or command)
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
    refusal_text = r.refusal_text,
    sent = state.conversation, -- the conversation the ask sent (nil: a new thread)
    conversation = r.conversation, -- the one the answer belongs to
    lines = state.panel:lines(),
    footer = state.panel.win and vim.api.nvim_win_is_valid(state.panel.win)
      and vim.api.nvim_win_get_config(state.panel.win).footer or nil,
  }
end

--- The float as a person sees it: its text row by row as the window wraps it on screen.
local function screen_rows(win)
  local buf = vim.api.nvim_win_get_buf(win)
  local rows, order = {}, {}
  local function add(row, text)
    if row == 0 then
      return -- not on screen
    end
    if not rows[row] then
      rows[row] = {}
      order[#order + 1] = row
    end
    table.insert(rows[row], text)
  end
  vim.cmd("redraw")
  for lnum, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line == "" then
      add(vim.fn.screenpos(win, lnum, 1).row, "")
    end
    local byte = 0
    for _, ch in ipairs(vim.fn.split(line, "\\zs")) do
      add(vim.fn.screenpos(win, lnum, byte + 1).row, ch)
      byte = byte + #ch
    end
  end
  table.sort(order)
  return vim.tbl_map(function(row)
    return (table.concat(rows[row]):gsub("%s+$", ""))
  end, order)
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
      rows = screen_rows(state.panel.win),
      prompt = prompt,
      candidates = state.result and #(state.result.candidates or {}) or 0,
      excerpts = vim.tbl_map(function(c)
        return c.excerpt
      end, state.result and state.result.candidates or {}),
      links = (function() -- the sources <CR> opens (a wrapped one is on several rows)
        local seen = {}
        for _, l in pairs(state.panel.links) do
          seen[l.path .. ":" .. l.line] = true
        end
        return vim.tbl_count(seen)
      end)(),
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
    -- the server's `$/progress` end for the cancelled answer, after all of its reports (Neovim's
    -- own progress handler still sees it once kebab has let go of the token)
    local ended = false
    vim.api.nvim_create_autocmd("LspProgress", {
      group = vim.api.nvim_create_augroup("kbtest_cancel", { clear = true }),
      callback = function(ev)
        local p = ev.data and ev.data.params or {}
        if p.token == state.token and type(p.value) == "table" and p.value.kind == "end" then
          ended = p.value.message
        end
      end,
    })
    vim.cmd("KebabCancel")
    out.cancel = {
      status = state.status,
      lines = state.panel:lines(),
      chunks_at_cancel = #state.chunks,
      text_at_cancel = state.text,
    }
    -- Neovim drops the response to a cancelled request: do not wait for it. Wait for the end
    -- of the answer's progress (nothing of that answer comes after it), then a round trip to
    -- the server so whatever it sent before has been handled, then check that nothing changed
    -- the float.
    wait(15000, function()
      return ended
    end, "the cancelled answer's progress end")
    request("kebab/status", {})
    flush_scheduled()
    out.cancel.after = {
      progress_end = ended,
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

function S.numbers()
  local note
  step("open", function()
    open_ready("inbox/numbers.md")
    note = vim.api.nvim_get_current_buf()
  end)
  step("ask", function()
    local state = ask(QUESTION)
    out.asked = outcome(state)
    state.panel:close()
  end)
  step("insert", function()
    vim.api.nvim_set_current_buf(note)
    local lnum = assert(line_of(note, QUESTION))
    vim.api.nvim_win_set_cursor(0, { lnum, 3 })
    vim.cmd("KebabInsert")
    wait(20000, function()
      return line_of(note, "[^kb-4]:") ~= nil
    end, "the answer in the note")
    out.lines = vim.api.nvim_buf_get_lines(note, 0, -1, false)
  end)
  step("wiki", function()
    open_ready("tools/recurring.md")
    local state = ask("Where is the new task put when a recurring task is done?")
    out.wiki = outcome(state)
    state.panel:close()
  end)
end

function S.thread()
  step("open", function()
    open_ready("ops/postgres.md")
  end)
  step("thread", function()
    local first = ask("How is Postgres set up on nas01?")
    out.first = outcome(first)
    first.panel:close()
    local follow = ask("and which port does it listen on?", "KebabAsk!")
    out.follow = outcome(follow)
    follow.panel:close()
    local fresh = ask("and which port does it listen on?") -- a new question, a new thread
    out.fresh = outcome(fresh)
    fresh.panel:close()
    local again = ask("and which port does it listen on?", "KebabFollow") -- follows `fresh`
    out.again = outcome(again)
    again.panel:close()
    vim.cmd("KebabNew")
    local orphan = ask("and which port does it listen on?", "KebabFollow")
    out.orphan = outcome(orphan)
    orphan.panel:close()
  end)
end

--- setup() after a note is already open (lazy.nvim's `ft = "markdown"`, `nvim -c … note.md`).
function S.lazy()
  step("open", function()
    out.lazy = { buffer = vim.api.nvim_buf_get_name(0) }
    ready()
  end)
  step("lazy", function()
    local c = client()
    local attached = {
      buffer = vim.api.nvim_buf_get_name(0),
      attached = #vim.lsp.get_clients({ name = "kebab", bufnr = 0 }),
      clients = #vim.lsp.get_clients({ name = "kebab" }),
      enabled = vim.lsp.is_enabled and vim.lsp.is_enabled("kebab") or false,
      root = c.config.root_dir,
    }
    out.lazy = vim.tbl_extend("force", outcome(ask(QUESTION)), attached)
  end)
end

--- :KebabInsert on a question the notes cannot answer: a float, and no message in the way.
function S.insert_refused()
  local note
  step("open", function()
    open_ready("inbox/questions.md")
    note = vim.api.nvim_get_current_buf()
  end)
  step("insert_refused", function()
    -- longer than the command line: "answering: …" must still fit on it
    local question = "Who won the 1998 football world cup in France, and who scored the goals "
      .. "in the final against Brazil?"
    vim.api.nvim_buf_set_lines(note, 0, 0, false, { question, "" })
    vim.api.nvim_win_set_cursor(0, { 1, 3 })
    -- the setting the server dropped at startup, said with window/showMessage (Warning)
    out.startup_messages = vim.api.nvim_exec2("messages", { output = true }).output
    out.startup_server_messages = of("message")
    vim.cmd("messages clear")
    vim.v.errmsg = ""
    vim.cmd("KebabInsert")
    wait(20000, function()
      local state = kebab.current()
      return #of("inserted") > 0 and state ~= nil and state.token == "insert"
    end, "the refusal's float")
    flush_scheduled() -- anything queued to be echoed has been
    local state = kebab.current()
    out.insert_refused = vim.tbl_extend("force", outcome(state), {
      messages = vim.api.nvim_exec2("messages", { output = true }).output,
      errmsg = vim.v.errmsg,
      server_messages = vim.list_slice(of("message"), #out.startup_server_messages + 1),
      mode = vim.api.nvim_get_mode(),
      note_first = vim.api.nvim_buf_get_lines(note, 0, 3, false),
      in_float = vim.api.nvim_get_current_win() == state.panel.win,
      rows = screen_rows(state.panel.win),
    })
  end)
end

--- The float's rendering, on answers made up here (no server needed).
function S.render()
  local ui = require("kebab.ui")
  step("open", function()
    vim.o.columns, vim.o.lines = 60, 40
  end)
  local function show(result, extra)
    local question = (extra or {}).question or "How do I report a bug?"
    local state = vim.tbl_extend("force", {
      question = question,
      status = "done",
      started = vim.uv.hrtime(),
      root = root,
      text = "",
      chunks = {},
      result = vim.tbl_extend("force", -- an answer.v1 always carries its question
        { model = { backend = "extractive" }, citations = {}, question = question }, result),
    }, extra or {})
    state.panel = ui.panel("kebab")
    ui.render_answer(state)
    local view = {
      lines = state.panel:lines(),
      buffer = state.panel:rows(),
      links = (function() -- row (as a string: a sparse list does not encode) -> cited line
        local by_row = vim.empty_dict()
        for row, l in pairs(state.panel.links) do
          by_row[tostring(row)] = l.line
        end
        return by_row
      end)(),
      width = vim.api.nvim_win_get_width(state.panel.win),
      rows = screen_rows(state.panel.win),
      footer = vim.api.nvim_win_get_config(state.panel.win).footer,
      conceallevel = vim.wo[state.panel.win].conceallevel,
      highlights = #vim.api.nvim_buf_get_extmarks(state.panel.buf, -1, 0, -1, {}),
      italic = (function() -- rows (1-based) with italic text, and its first byte (0-based)
        local at = {}
        local marks = vim.api.nvim_buf_get_extmarks(state.panel.buf, -1, 0, -1, { details = true })
        for _, m in ipairs(marks) do
          if m[4].hl_group == "@markup.italic" then
            at[#at + 1] = { m[2] + 1, m[3] }
          end
        end
        return at
      end)(),
    }
    state.panel:close()
    return view
  end
  step("render", function()
    local hash = "abcdef1234567890"
    out.links = show({
      grounded = true,
      markdown = table.concat({
        "Before filing, read the [contributing guide](https://github.com/example/project/blob/"
          .. "main/CONTRIBUTING.md#submitting-a-bug-report) on **submitting a bug report**.[^kb-2]",
        "See ![the form](img/form.png) and `[not](a link)` in code.[^kb-1]",
        "",
        '[^kb-1]: [Guide › Form](guide.md#form "kb:0123456789ab") L5–L9',
        '[^kb-2]: [Guide › Bugs](guide.md#bugs "kb:' .. hash:sub(1, 12) .. '") L1–L3',
      }, "\n"),
      citations = {
        { marker = 1, path = "guide.md", start_line = 1, end_line = 3, content_hash = hash,
          heading_path = { "Guide", "Bugs" }, label = "kb-2" },
        { marker = 2, path = "guide.md", start_line = 5, end_line = 9,
          content_hash = "0123456789abcdef", heading_path = { "Guide", "Form" }, label = "kb-1" },
      },
    })
    -- an answer stored by a server older than `citations[].label`: the markers' numbers
    out.unlabelled = show({
      grounded = true,
      markdown = "Bugs go in the tracker.[^kb-1]\n\n"
        .. '[^kb-1]: [Guide › Bugs](guide.md#bugs "kb:' .. hash:sub(1, 12) .. '") L1–L3',
      citations = {
        { marker = 3, path = "guide.md", start_line = 1, end_line = 3, content_hash = hash,
          heading_path = { "Guide", "Bugs" }, label = vim.NIL },
      },
    })
    out.building = show({
      grounded = false,
      refusal_reason = "score_gate",
      answer = "",
      refusal_text = "The closest passages do not answer this.",
      index_building = {
        files_done = 3,
        files_total = 16,
        vectors_pending = 40,
        message = "The index is still being built (3 of 16 files): ask again when it is done.",
      },
    })
    out.filtered = show({
      grounded = false,
      outcome = "not_answered",
      refusal_reason = "score_gate",
      answer = "",
      refusal_text = "The closest passages do not answer this.",
      filters = "#ops path:infra/",
    })
    out.fallback = show({ grounded = false, refusal_reason = "score_gate", answer = "" })
    out.unsupported = show({
      grounded = false,
      refusal_reason = "llm_self_judge",
      answer = "Daily snapshots are kept for 20 days.",
      refusal_text = "The notes do not support this answer. No passage holds: 20.",
      unsupported = { "20", "Daily snapshots are kept for 20 days." },
      candidates = {
        { path = "ops/backup.md", start_line = 28, end_line = 36,
          heading_path = { "Home server backups", "Retention policy" }, label = vim.NIL,
          excerpt = "Flag · Value --keep-daily · 7 one per day, 7 days; *not* emphasis, "
            .. "[^kb-1] not a footnote, and it goes on until it has to wrap onto the next row" },
        { path = "ops/backup.md", start_line = 12, end_line = 26, excerpt = vim.NIL,
          heading_path = { "Home server backups", "Schedule" } },
      },
    })
    out.wrapped = show({
      grounded = true,
      markdown = table.concat({
        "The backup job runs every day at 02:30 local time via a systemd unit "
          .. "(`restic-backup.timer`).[^kb-1]",
        "- a list item that goes on and on until it has to wrap onto the next row of the float",
        "",
        '[^kb-1]: [Schedule](ops/backup.md#schedule "kb:' .. hash:sub(1, 12) .. '") L12–L26',
      }, "\n"),
      citations = {
        {
          path = "ops/a/rather/deeply/nested/folder/of/notes/backup.md",
          start_line = 12,
          end_line = 26,
          content_hash = hash,
          heading_path = { "Home server backups", "Schedule", "Timers" },
          label = "kb-1",
        },
      },
    })
    -- in Korean (answer.v1 `lang`): every word of the plugin's own, the answer's as it is
    local ko = { question = "백업은 언제 돌아?" }
    out.korean_grounded = show({
      lang = "ko",
      grounded = true,
      outcome = "answered",
      markdown = "백업은 매일 02:30에 돈다.[^kb-1]\n\n"
        .. '[^kb-1]: [백업 › 일정](ops/backup.md#schedule "kb:' .. hash:sub(1, 12) .. '") L12–L26',
      citations = {
        { marker = 1, path = "ops/backup.md", start_line = 12, end_line = 26,
          content_hash = hash, heading_path = { "백업", "일정" }, label = "kb-1" },
      },
      filters = "#ops",
      conflicts = { { a = 1, b = 2, a_source = "ops/backup.md:12-26",
        b_source = "ops/old.md:1-4", detail = "02:30 / 03:00" } },
      index_building = { files_done = 3, files_total = 16, vectors_pending = 0, message = vim.NIL },
    }, ko)
    out.korean_closest = show({
      lang = "ko",
      grounded = false,
      outcome = "closest",
      refusal_reason = "llm_self_judge",
      answer = "",
      candidates = {
        { path = "ops/backup.md", start_line = 12, end_line = 26, excerpt = "매일 02:30",
          heading_path = { "백업", "일정" } },
      },
    }, vim.tbl_extend("force", ko, { inserting = true }))
    out.korean_fallback = show({
      lang = "ko",
      grounded = false,
      outcome = "not_answered",
      refusal_reason = "score_gate",
      answer = "",
      error = "시간 초과",
      candidates = {
        { path = "ops/backup.md", start_line = 12, end_line = 26, heading_path = { "백업" } },
      },
    }, ko)
    out.korean_unsupported = show({
      lang = "ko",
      grounded = false,
      refusal_reason = "llm_self_judge",
      answer = "백업은 20일 동안 보관한다.",
      refusal_text = "노트가 이 답을 뒷받침하지 않습니다.",
      unsupported = { "20" },
      candidates = {
        { path = "ops/backup.md", start_line = 28, end_line = 36, heading_path = { "백업" } },
      },
    }, ko)
    -- an answer stored before `lang` (vim.NIL, as JSON null decodes): its question's language
    out.korean_unknown = show({
      lang = vim.NIL,
      grounded = false,
      outcome = "not_answered",
      refusal_reason = "score_gate",
      answer = "",
    }, ko)
    -- before the answer, and with none: the question's language, as the server will decide it
    local follow = { follows = true, follows_given = true }
    out.korean_running = show({}, vim.tbl_extend("force", ko, follow, { status = "running",
      result = vim.NIL }))
    out.korean_cancelled = show({}, vim.tbl_extend("force", ko, { status = "cancelled",
      text = "백업은", result = vim.NIL }))
    out.korean_failed = show({}, vim.tbl_extend("force", ko, { status = "error",
      result = vim.NIL }))
    out.english_running = show({}, { status = "running", result = vim.NIL,
      question = "CORS 설정은 where is the allow_credentials flag set in the API server?" })
    out.question_langs = {}
    for _, q in ipairs({
      "정기 배포는 무슨 요일에 해?",
      "CORSMiddleware allow_credentials 설정하려면?",
      "2002년 월드컵 4강 상대는 누구였어?",
      "What time does the nightly backup job run?",
      "Is the 배포 on Tuesday or Thursday, and at which hour of the afternoon?",
      "배포 v1.8.0 at 14:00, fix/412-login? _x",
      "배포 a b c d",
      "배포 a b c d e",
      "“배포” … 언제？ 😀 ok",
      "path:infra/ #ops status=draft tag:x 백업은?", -- Korean, once its filter words are off
      "#ops reviewed>=2024-01-01 when is the backup?",
      "#!/bin/bash a b c 배포", -- a shebang is no tag: English by its five words
      "분류=운영 a b c d e f 배포", -- a Korean key filters too
      "",
    }) do
      out.question_langs[#out.question_langs + 1] = { q, ui.question_lang(q) }
    end
    out.readable = {}
    for _, line in ipairs({
      "a [link](x.md) and [^kb-12] and [^3] and [^note]",
      "**bold [link](y)** then *it* and 2*3*4 and `code [^kb-1]`",
      "* a list item with *emphasis*",
      "[[wiki link]] reads as text, [empty]() is its target",
      "see [[#Order of the new task]] and [[Recurring#When done|done]], in _italics_ and "
        .. "__bold__; snake_case_name stays",
    }) do
      local text, spans = ui.readable(line)
      out.readable[#out.readable + 1] = { text = text, spans = spans }
    end
  end)
end

--- :KebabAsk in Korean: one question the Korean notes answer, and two they do not (one not
--- answered, one whose passages come close), each float as a person sees it.
function S.korean()
  local note
  local said = {} -- what was said with vim.notify
  local notify = vim.notify
  vim.notify = function(msg, level, o)
    said[#said + 1] = msg
    return notify(msg, level, o)
  end
  step("open", function()
    open_ready("korean/questions.md") -- the test writes it: the question Insert answers
    note = vim.api.nvim_get_current_buf()
  end)
  local function asked(question)
    local state = ask(question)
    local r = state.result or {}
    local seen = vim.tbl_extend("force", outcome(state), {
      lang = r.lang,
      outcome = r.outcome,
      candidates = #(r.candidates or {}),
      citations = vim.tbl_map(function(c)
        return { path = c.path, start_line = c.start_line, end_line = c.end_line }
      end, r.citations or {}),
      rows = screen_rows(state.panel.win),
    })
    state.panel:close()
    return seen
  end
  step("korean", function()
    out.korean = {
      answered = asked("정기 배포는 무슨 요일에 해?"),
      not_answered = asked("2002년 월드컵 4강 상대는 누구였어?"),
      closest = asked("사내 카페 영업 시간은 언제야?"),
    }
  end)
  step("korean_insert", function()
    vim.api.nvim_set_current_buf(note)
    local lnum = assert(line_of(note, "정기 배포는 무슨 요일에 해?"))
    vim.api.nvim_win_set_cursor(0, { lnum, 3 })
    local before = #said
    vim.cmd("KebabInsert")
    wait(20000, function()
      return #of("inserted") > 0 and line_of(note, "[^kb-1]:") ~= nil
    end, "the answer in the note")
    flush_scheduled()
    out.korean_insert = { said = vim.list_slice(said, before + 1) }
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

--- The quickfix (or a window's location) list as plain data: files relative to the workspace.
local function qf_list(win)
  local what = { title = 1, items = 1, context = 1, size = 1 }
  local list = win and vim.fn.getloclist(win, what) or vim.fn.getqflist(what)
  list.items = vim.tbl_map(function(item)
    local file = vim.api.nvim_buf_get_name(item.bufnr)
    return {
      path = file:sub(1, #root + 1) == root .. "/" and file:sub(#root + 2) or file,
      lnum = item.lnum,
      end_lnum = item.end_lnum,
      text = item.text,
      user_data = item.user_data,
    }
  end, list.items)
  list.context = type(list.context) == "table" and { method = list.context.method } or nil
  return list
end

--- :KebabRelated, and Neovim's own vim.lsp.buf.workspace_symbol() against kebab.
function S.related()
  local note, note_win
  local notes = {} -- what was said with vim.notify
  local notify = vim.notify
  vim.notify = function(msg, level, o)
    notes[#notes + 1] = { message = msg, level = level }
    return notify(msg, level, o)
  end
  local function said_since(n)
    return vim.tbl_map(function(m)
      return m.message
    end, vim.list_slice(notes, n + 1))
  end
  --- Run `command` with the cursor on `lnum` of the note; wait for its kebab/related answer.
  local function related(command, lnum)
    vim.api.nvim_set_current_win(note_win)
    vim.api.nvim_win_set_cursor(0, { lnum or 14, 0 })
    local before, said = #of("related"), #notes
    vim.fn.setqflist({}, " ", { title = "before", items = {} })
    if type(command) == "function" then
      command()
    else
      vim.cmd(command)
    end
    wait(15000, function()
      return #of("related") > before
    end, "kebab/related for " .. tostring(command))
    vim.wait(200, function()
      return vim.fn.getqflist({ title = 1 }).title ~= "before"
    end, 10)
    local e = of("related")[before + 1]
    local seen = {
      list = qf_list(),
      in_quickfix = vim.bo.buftype == "quickfix",
      shown = vim.bo.buftype == "quickfix" and vim.api.nvim_buf_get_lines(0, 0, -1, false) or nil,
      hits = e.hits,
      said = said_since(said),
    }
    vim.cmd("cclose")
    return seen
  end
  step("open", function()
    open_ready("ops/backup.md")
    note, note_win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
    out.section = require("kebab.related").section_at(note, 14)
  end)
  step("related", function()
    out.related = related("KebabRelated 3")
  end)
  step("related_same_note", function()
    out.related_same_note = related("KebabRelated! 20")
  end)
  step("related_lua", function()
    local got
    local seen = related(function()
      kebab.related({ k = 2, on_list = function(list)
        got = { title = list.title, items = #list.items, hits = #list.hits }
      end })
    end, 30)
    out.related_lua = { on_list = got, list = seen.list }
  end)
  step("related_none", function()
    -- an empty note of the workspace: nothing indexed, nothing related
    vim.cmd.edit(vim.fn.fnameescape(root .. "/inbox/empty.md"))
    wait(15000, function()
      return #vim.lsp.get_clients({ name = "kebab", bufnr = 0 }) > 0
    end, "the client to attach to the empty note")
    note_win = vim.api.nvim_get_current_win()
    out.related_none = related("KebabRelated", 1)
    -- a buffer that is not a note: said at once, nothing asked
    vim.cmd("enew")
    local said, asked = #notes, #of("related")
    vim.cmd("KebabRelated")
    out.related_scratch = { said = said_since(said), asked = #of("related") - asked }
    said = #notes
    vim.cmd("KebabRelated many")
    out.related_bad_k = said_since(said)
    vim.cmd.buffer(note)
    note_win = vim.api.nvim_get_current_win()
  end)
  step("symbols", function()
    vim.api.nvim_set_current_win(note_win)
    vim.fn.setqflist({}, " ", { title = "before", items = {} })
    vim.lsp.buf.workspace_symbol("nightly backup") -- Neovim's own, no kebab code
    wait(15000, function()
      return vim.fn.getqflist({ title = 1 }).title ~= "before"
    end, "workspace/symbol into the quickfix list")
    out.symbols = qf_list()
    out.symbols.in_quickfix = vim.bo.buftype == "quickfix"
    out.symbols.shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    vim.cmd("cclose")
    vim.api.nvim_set_current_win(note_win)
    vim.lsp.buf.workspace_symbol("nightly backup", { loclist = true })
    wait(15000, function()
      return vim.fn.getloclist(note_win, { size = 1 }).size > 0
    end, "workspace/symbol into the location list")
    out.symbols_loclist = qf_list(note_win)
    vim.cmd("lclose")
    vim.api.nvim_set_current_win(note_win)
    local said = #notes
    vim.lsp.buf.workspace_symbol("") -- an empty query lists nothing
    wait(15000, function()
      return #notes > said
    end, "the empty query's answer")
    out.symbols_empty = { said = said_since(said), title = vim.fn.getqflist({ title = 1 }).title }
  end)
end

--- :KebabLink in inbox/restores.md (the test writes it): on a line of text (no action), on the
--- heading "## One file", then on a line range in "## Later".
function S.link()
  local note, note_win
  local notes = {} -- what was said with vim.notify
  local notify = vim.notify
  vim.notify = function(msg, level, o)
    notes[#notes + 1] = msg
    return notify(msg, level, o)
  end
  local function said_since(n)
    return vim.list_slice(notes, n + 1)
  end
  local function said(pattern, since)
    for _, m in ipairs(said_since(since or 0)) do
      if m:find(pattern, 1, true) then
        return true
      end
    end
    return false
  end
  local function lines()
    return vim.api.nvim_buf_get_lines(note, 0, -1, false)
  end
  step("open", function()
    open_ready("inbox/restores.md")
    note, note_win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
  end)
  step("link_none", function()
    local before, n = lines(), #notes
    vim.api.nvim_win_set_cursor(note_win, { 5, 0 }) -- the paragraph, no selection
    vim.cmd("KebabLink")
    wait(10000, function()
      return said("no related-notes action here", n)
    end, "the word that there is no action on a line of text")
    flush_scheduled()
    out.link_none = {
      said = said_since(n),
      unchanged = vim.deep_equal(before, lines()),
      linked = #of("linked"),
    }
  end)
  step("link", function()
    local n = #notes
    vim.api.nvim_win_set_cursor(note_win, { 3, 0 }) -- "## One file"
    vim.cmd("KebabLink")
    wait(30000, function()
      return #of("linked") > 0 and line_of(note, "Related: ") ~= nil
    end, "the Related line in the note")
    wait(5000, function()
      return said("kebab: linked ", n)
    end, "the word that the links were written")
    local e = of("linked")[1]
    vim.api.nvim_win_set_cursor(note_win, { 1, 0 })
    out.link = {
      applied = e.applied,
      links = e.links,
      lines = lines(),
      modified = vim.bo[note].modified,
      said = said_since(n),
      rows = screen_rows(note_win), -- the note as it is on screen now
    }
  end)
  step("link_range", function()
    -- saved: the server reads which notes the note links already from the file
    vim.api.nvim_buf_call(note, function()
      vim.cmd("silent write")
    end)
    local n, count = #notes, #of("linked")
    local last = vim.api.nvim_buf_line_count(note) -- "Nothing yet." under "## Later"
    vim.cmd(("%d,%dKebabLink"):format(last, last)) -- a line range: on any line of text
    wait(30000, function()
      return #of("linked") > count
    end, "kebab.linkRelated on the range")
    wait(5000, function()
      return said("kebab: linked ", n) or said("that this note does not link already", n)
    end, "what came of it")
    local e = of("linked")[count + 1]
    out.link_range = { applied = e.applied, links = e.links, lines = lines(), said = said_since(n) }
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
