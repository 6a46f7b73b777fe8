-- kebab for Neovim: the `kebab serve` language server on Markdown notes, and commands that ask
-- it questions.
--
--   require("kebab").setup({ init_options = { llm = { backend = "ollama", model = "llama3.2" } } })
--
-- `:KebabAsk [question]` streams the answer into a float (a new question, a new thread);
-- `:KebabAsk! [question]` or `:KebabFollow [question]` follows up on the last answer in the
-- workspace; `:KebabInsert` answers the question under the cursor in the note (the server's
-- "Answer with kebab" code action), `:KebabStatus` shows the index, `:KebabCancel` stops a
-- running answer, `:KebabReindex` rebuilds the index. `:KebabRelated [k]` lists the passages in
-- other notes closest in meaning to the section under the cursor in the quickfix list;
-- `:KebabLink` on a heading (or selected lines) adds a `Related: ` line of links to the notes
-- most related to that section (the server's "Link related notes" code action).
-- Hover and go to definition on a `[^kb-n]` footnote are plain LSP (`K`, `gd` / `<C-]>`).

local compat = require("kebab.compat")
local server = require("kebab.server")
local ui = require("kebab.ui")
local related = require("kebab.related")

local M = {}

local api = vim.api
local GROUP = "kebab"

local defaults = {
  -- The server command: a list, a string ("kebab serve"), or fun(root): list. Default: the
  -- workspace's .venv/bin/kebab when there is one, else `kebab` on $PATH.
  cmd = nil,
  -- Sent as `initializationOptions`: any kebab.toml setting, e.g.
  -- { index_dir = "...", llm = { backend = "ollama", endpoint = "http://127.0.0.1:11434",
  --   model = "llama3.2" } }
  init_options = {},
  -- Answered to the server's `workspace/configuration` (section "kebab"); optional.
  settings = nil,
  -- A workspace root is the nearest folder holding one of these; no root, no server.
  root_markers = { ".git", ".obsidian", "kebab.toml" },
  filetypes = { "markdown" },
  on_attach = nil,
  capabilities = nil,
  -- nil: vim.lsp.config + vim.lsp.enable on 0.11+, vim.lsp.start on 0.10. false forces the
  -- vim.lsp.start path on 0.11 as well.
  use_lsp_enable = nil,
  -- The answer float.
  window = { width = 88, max_height = 0.7, border = "rounded" },
  -- Extra `kebab/ask` params for every ask: { k = 8, mode = "hybrid" }.
  ask = {},
  -- Extra `kebab/related` params for :KebabRelated: { k = 10 }.
  related = {},
  -- fun(event, data): "ask", "begin", "chunk", "result", "error", "cancelled", "inserted",
  -- "linked", "status", "message", "related" (see :h kebab-events).
  on_event = nil,
  -- Define the :Kebab* commands.
  commands = true,
}

M.config = vim.deepcopy(defaults)
server.config = M.config

local asks = {} -- token -> ask state, while its progress is ours to show
local current = nil -- the latest ask (running or finished)
local inserting = nil -- {client_id, id} of a running kebab.insertAnswer request
local counter = 0
-- workspace root -> {conversation, question} of its last answer: what :KebabFollow follows up.
-- The server mints a thread id for every answer; an ask that sends none starts a new thread.
local threads = {}

local function emit(event, data)
  local hook = M.config.on_event
  if hook then
    local ok, err = pcall(hook, event, data)
    if not ok then
      vim.notify("kebab: on_event failed: " .. tostring(err), vim.log.levels.WARN)
    end
  end
end

--- `text` cut to fit the command line: a longer message stops the editor at a hit-enter prompt.
local function fit(text)
  local room = math.max(20, (vim.v.echospace or 80) - 1)
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local n = vim.fn.strchars(text)
  while n > 0 and vim.fn.strdisplaywidth(vim.fn.strcharpart(text, 0, n)) > room - 1 do
    n = n - 1
  end
  return vim.fn.strcharpart(text, 0, n) .. "…"
end

local function notify(msg, level, opts)
  msg = "kebab: " .. msg
  vim.notify(opts and opts.fit and fit(msg) or msg, level or vim.log.levels.INFO)
end

-- the server -------------------------------------------------------------------------------

M.root_dir = server.root_dir
M.server_cmd = server.server_cmd
M.start = server.start
M.client = server.client

local function on_progress(state, value)
  if type(value) ~= "table" then
    return
  end
  if value.kind == "begin" then
    state.phase = value.message
    ui.render_answer(state)
    emit("begin", { token = state.token, message = value.message })
  elseif value.kind == "report" then
    if state.status ~= "running" or type(value.message) ~= "string" then
      return
    end
    state.text = state.text .. value.message
    state.chunks[#state.chunks + 1] = value.message
    ui.render_answer(state)
    emit("chunk", { token = state.token, text = value.message, state = state })
  elseif value.kind == "end" then
    state.outcome = value.message
  end
end

--- `$/progress`: show our asks' reports in their float, then hand every message (ours too) to
--- the handler that was there, so statusline plugins and `LspProgress` see all of it.
local function progress_handler(err, result, ctx, config)
  local state = type(result) == "table" and asks[result.token] or nil
  if state then
    local ok, e = pcall(on_progress, state, result.value)
    if not ok then
      vim.notify("kebab: progress: " .. tostring(e), vim.log.levels.WARN)
    end
  end
  local default = vim.lsp.handlers["$/progress"]
  if default and default ~= progress_handler then
    return default(err, result, ctx, config)
  end
end

--- The last answer in a workspace root is what a follow-up continues.
local function remember(root, answer)
  local id = type(answer) == "table" and answer.conversation or nil
  if type(id) == "string" and id ~= "" then
    threads[root or ""] = { conversation = id, question = answer.question }
  end
end

--- The thread a follow-up in `root` continues: {conversation, question}, or nil.
function M.thread(root)
  return threads[root or ""]
end

-- `window/showMessage`: the server tells the user things this way (a refused insert, a setting
-- it dropped). Neovim's own handler echoes `LSP[kebab][Info] …` with a newline, which stops
-- the editor at a hit-enter prompt. An Info message about the running insert is said again by
-- its float (a refusal) or its notification, so it is kept quiet; the rest go to vim.notify,
-- where notification plugins pick them up.
local L = vim.log.levels
local LEVELS = { L.ERROR, L.WARN, L.INFO, L.DEBUG } -- by LSP MessageType (1 = Error … 4 = Log)

local function show_message_handler(_, params, ctx)
  if type(params) ~= "table" or type(params.message) ~= "string" then
    return vim.NIL
  end
  local level = LEVELS[params.type] or L.INFO
  local quiet = inserting ~= nil and level <= L.INFO -- warnings and errors are always said
  emit("message", { type = params.type, message = params.message, shown = not quiet })
  if quiet then
    inserting.message = params.message
    return vim.NIL
  end
  local text = params.message:gsub("%s+$", "")
  if not text:match("^kebab: ") then
    text = "kebab: " .. text
  end
  vim.schedule(function()
    vim.notify(text, level)
  end)
  return vim.NIL
end

local function need_client(bufnr)
  local client, attached = M.client(bufnr)
  if not client then
    notify("no kebab server is running: open a Markdown note inside a workspace (a folder with "
      .. table.concat(M.config.root_markers, ", ") .. ")", vim.log.levels.WARN)
  end
  return client, attached
end

-- asking -----------------------------------------------------------------------------------

--- The latest ask: {question, token, status, text, chunks, result, error, panel, ...}.
function M.current()
  return current
end

--- One answer float at a time: a new one cancels and closes the last.
local function close_current()
  if current then
    if current.status == "running" then
      M.cancel({ quiet = true, state = current })
    end
    if current.panel then
      current.panel:close()
    end
  end
end

local function finish(state)
  asks[state.token] = nil
  ui.render_answer(state)
end

--- Ask a question; the answer streams into a float. Without a question, prompts for one.
--- A new question starts a new thread: it sends no `conversation` (unless `params` has one).
--- @param question string?
--- @param params table? extra `kebab/ask` params (k, mode, history, conversation, ...)
--- @param opts {follow: boolean?}? follow: a follow-up on the last answer in the workspace
function M.ask(question, params, opts)
  opts = opts or {}
  if not question or vim.trim(question) == "" then
    vim.ui.input({ prompt = opts.follow and "kebab follow-up: " or "kebab ask: " }, function(input)
      if input and vim.trim(input) ~= "" then
        M.ask(input, params, opts)
      end
    end)
    return nil
  end
  local bufnr = api.nvim_get_current_buf()
  local client, attached = need_client(bufnr)
  if not client then
    return nil
  end
  close_current()
  counter = counter + 1
  local token = ("kebab-nvim-%d-%d"):format(vim.fn.getpid(), counter)
  local state = {
    question = vim.trim(question),
    token = token,
    client_id = client.id,
    root = client.config.root_dir or client.root_dir,
    status = "running",
    text = "",
    chunks = {},
    started = vim.uv.hrtime(),
  }
  -- A follow-up names the thread of the workspace's last answer; anything else starts afresh
  -- (the server mints the new thread's id and returns it in the answer). `follows`: the
  -- question it follows up, or true (the float names it in the answer's words).
  local request = vim.tbl_extend("force", {}, M.config.ask or {}, params or {},
    { question = state.question, workDoneToken = token })
  if opts.follow then
    state.follow_wanted = true
    local thread = request.conversation == nil and threads[state.root or ""] or nil
    if thread then
      request.conversation = thread.conversation
      state.follows = thread.question or true
    elseif request.conversation ~= nil then
      state.follows, state.follows_given = true, true
    end
  end
  state.conversation = request.conversation
  if attached and request.uri == nil then
    request.uri = vim.uri_from_bufnr(bufnr)
  end
  state.panel = ui.panel("kebab", function()
    if state.status == "running" then
      M.cancel({ quiet = true, state = state })
    end
  end)
  vim.keymap.set("n", "<C-c>", function()
    M.cancel({ state = state, quiet = true })
  end, { buffer = state.panel.buf, desc = "kebab: cancel the answer" })
  asks[token] = state
  current = state
  ui.render_answer(state)
  emit("ask", { question = state.question, token = token, conversation = request.conversation })
  local ok, id = compat.request(client, "kebab/ask", request, function(err, result)
    if state.status ~= "running" then
      return
    end
    if err then
      state.status = "error"
      state.error = err.message or vim.inspect(err)
      emit("error", { token = token, error = state.error })
    else
      state.status = "done"
      state.result = result
      remember(state.root, result)
      emit("result", { token = token, answer = result, chunks = state.chunks })
    end
    finish(state)
  end, attached and bufnr or nil)
  if not ok then
    state.status = "error"
    state.error = "the kebab server has stopped"
    finish(state)
    return state
  end
  state.request_id = id
  return state
end

--- A follow-up on the last answer in the workspace (its `conversation`): asked with that
--- thread's earlier turns. With no earlier answer it is a new question, and the float says so.
function M.follow(question, params)
  return M.ask(question, params, { follow = true })
end

--- Forget the threads: the next follow-up starts afresh. (:KebabAsk always does.)
function M.new_thread()
  threads = {}
  notify("new conversation")
end

--- Cancel the running ask (or insert). Neovim drops the response of a cancelled request, so
--- the float is marked cancelled here, at once.
--- @param opts {quiet: boolean?, state: table?}?
function M.cancel(opts)
  opts = opts or {}
  local state = opts.state or current
  local cancelled = false
  if state and state.status == "running" then
    local client = vim.lsp.get_client_by_id(state.client_id)
    if client and state.request_id then
      compat.cancel_request(client, state.request_id)
    end
    state.status = "cancelled"
    emit("cancelled", { token = state.token, text = state.text })
    finish(state)
    cancelled = true
  end
  if not opts.state and inserting then
    local client = vim.lsp.get_client_by_id(inserting.client_id)
    if client then
      compat.cancel_request(client, inserting.id)
    end
    inserting = nil
    cancelled = true
    if not opts.quiet then
      notify("answer cancelled; nothing was inserted")
    end
  end
  if not cancelled and not opts.quiet then
    notify("nothing to cancel")
  end
  return cancelled
end

-- answering in the note --------------------------------------------------------------------

local function insert_refused(client, answer)
  local state = {
    question = answer.question or "",
    token = "insert",
    client_id = client.id,
    root = client.config.root_dir or client.root_dir,
    status = "done",
    result = answer,
    inserting = true,
    text = "",
    chunks = {},
    started = vim.uv.hrtime(),
  }
  close_current()
  state.panel = ui.panel("kebab")
  current = state
  ui.render_answer(state)
end

local function run_insert(client, bufnr, command)
  local running
  local ok, id = compat.request(client, "workspace/executeCommand", {
    command = command.command,
    arguments = command.arguments,
  }, function(err, result)
    if inserting == running then
      inserting = nil
    end
    if err then
      notify("answering failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      emit("error", { error = err.message })
      return
    end
    emit("inserted", result)
    if type(result) ~= "table" then
      return
    end
    local answer = result.answer or {}
    remember(client.config.root_dir or client.root_dir, answer)
    if result.applied then
      -- in the answer's language; asked again, the server replaced its earlier answer under
      -- the line instead of adding one
      local w = ui.words(ui.answer_lang(answer))
      local cited = ui.count(w.n_citations, #(answer.citations or {}))
      notify((result.replaced and w.replaced or w.inserted):format(cited))
    elseif answer.grounded == false then
      insert_refused(client, answer) -- the float says why; the server's message stays quiet
    elseif running.message then
      notify((running.message:gsub("^kebab: ", "")))
    end
  end, bufnr)
  if ok then
    running = { client_id = client.id, id = id }
    inserting = running
    local asked = (command.arguments or {})[3]
    local w = ui.words(ui.question_lang(asked and tostring(asked) or ""))
    notify(w.answering_question:format(asked and tostring(asked) or w.the_question), nil,
      { fit = true }) -- a progress note: one line, never a prompt, in the question's language
  end
end

--- The kebab client of the note in `bufnr`; nil (and said why) when there is none.
local function note_client(bufnr)
  local client, attached = need_client(bufnr)
  if client and not attached then
    notify("this buffer is not a note of a kebab workspace", vim.log.levels.WARN)
    return nil
  end
  return client
end

--- Ask for the "refactor.rewrite" code actions at `params` and run the one whose command is
--- `name` with `run(client, bufnr, command)`; say `missing` when the server offers none.
local function code_action(client, bufnr, params, name, run, missing)
  params.context = { only = { "refactor.rewrite" }, diagnostics = {} }
  compat.request(client, "textDocument/codeAction", params, function(err, actions)
    if err then
      notify("code action failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    for _, action in ipairs(actions or {}) do
      local command = type(action.command) == "table" and action.command or action
      if command.command == name then
        run(client, bufnr, command)
        return
      end
    end
    notify(missing, vim.log.levels.WARN)
  end, bufnr)
end

--- Answer the question under the cursor (or in `range`) in the note: the server's
--- "Answer with kebab" code action, which runs `kebab.insertAnswer`.
--- @param range {start: integer[], ["end"]: integer[]}? (1,0)-indexed positions, as marks are
function M.insert(range)
  local bufnr = api.nvim_get_current_buf()
  local client = note_client(bufnr)
  if not client then
    return
  end
  local enc = compat.encoding(client)
  local params
  if range then
    params = vim.lsp.util.make_given_range_params(range.start, range["end"], bufnr, enc)
  else
    params = vim.lsp.util.make_range_params(0, enc)
  end
  code_action(client, bufnr, params, "kebab.insertAnswer", run_insert,
    "no question here: end the line with '?', select the question, or use a "
      .. "> [!question] callout")
end

-- linking related notes -------------------------------------------------------------------

local LINK_RELATED = "kebab.linkRelated"

--- Run the action's `kebab.linkRelated`: the server finds the notes and applies the edit
--- itself (workspace/applyEdit, which Neovim's own handler applies to the buffer).
local function run_link(client, bufnr, command)
  local ok = compat.request(client, "workspace/executeCommand", {
    command = command.command,
    arguments = command.arguments,
  }, function(err, result)
    if err then
      notify("linking failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      emit("error", { error = err.message })
      return
    end
    emit("linked", result)
    if type(result) ~= "table" then
      return
    end
    local links = type(result.links) == "table" and result.links or {}
    if result.applied then
      notify(("linked %d related note%s"):format(#links, #links == 1 and "" or "s"))
    elseif #links > 0 then
      notify("Neovim did not take the links; nothing was written: run :KebabLink again",
        vim.log.levels.WARN)
    end -- no links: the server said so (window/showMessage)
  end, bufnr)
  if ok then
    notify("linking related notes…", nil, { fit = true }) -- a progress note: one line
  else
    notify("the kebab server has stopped", vim.log.levels.ERROR)
  end
end

--- Link the notes most related in meaning to the section under the cursor: the server's
--- "Link related notes" code action (`kebab.linkRelated`), offered on a heading or on selected
--- lines. It adds a `Related: ` line of links after the section's text.
--- @param range {start: integer[], ["end"]: integer[]}? (1,0)-indexed positions, as marks are:
---   the lines from the first to the last are the selection
function M.link(range)
  local bufnr = api.nvim_get_current_buf()
  local client = note_client(bufnr)
  if not client then
    return
  end
  local params
  if range then
    -- whole lines: from the first line's start to the start of the line after the last
    local first = math.min(range.start[1], range["end"][1])
    local last = math.max(range.start[1], range["end"][1])
    params = {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      range = {
        start = { line = first - 1, character = 0 },
        ["end"] = { line = last, character = 0 },
      },
    }
  else
    params = vim.lsp.util.make_range_params(0, compat.encoding(client))
  end
  code_action(client, bufnr, params, LINK_RELATED, run_link,
    "no related-notes action here: put the cursor on a heading or select lines")
end

-- related passages -----------------------------------------------------------------------

--- The passages in other notes closest in meaning to the section under the cursor
--- (`kebab/related`), into the quickfix list, titled "kebab related: <heading path>", one entry
--- per passage: path:line, "heading › path — first words of the text". Says so when there
--- are none, or when the buffer is not a note of a kebab workspace.
--- @param opts {k: integer?, same_note: boolean?, loclist: boolean?, on_list: fun(list)?}?
---   k: how many (1-50; the server's default is 5); same_note: the note's other sections too;
---   loclist: the window's location list instead; on_list: given {title, items, context,
---   hits} instead of setting any list (for pickers), as vim.lsp.buf's on_list is.
function M.related(opts)
  opts = opts or {}
  local bufnr = api.nvim_get_current_buf()
  local win = api.nvim_get_current_win()
  local client, attached = need_client(bufnr)
  if not client then
    return nil
  end
  if not attached then
    notify("this buffer is not a note of a kebab workspace: :KebabRelated needs a Markdown "
      .. "note inside one", vim.log.levels.WARN)
    return nil
  end
  local params = vim.tbl_extend("force", {}, M.config.related or {})
  if opts.k ~= nil then
    params.k = opts.k
  end
  if opts.same_note ~= nil then
    params.same_note = opts.same_note and true or false
  end
  local k = params.k
  if k ~= nil and (type(k) ~= "number" or k ~= math.floor(k) or k < 1 or k > 50) then
    notify("k must be a whole number from 1 to 50, not " .. tostring(k), vim.log.levels.WARN)
    return nil
  end
  local cursor = api.nvim_win_get_cursor(win)
  local position = vim.lsp.util.make_position_params(win, compat.encoding(client)).position
  params.uri = vim.uri_from_bufnr(bufnr)
  params.position = position
  local heading = related.section_at(bufnr, cursor[1])
  local name = #heading > 0 and table.concat(heading, related.SEP)
    or vim.fn.fnamemodify(api.nvim_buf_get_name(bufnr), ":t")
  local title = "kebab related: " .. name
  local root = client.config.root_dir or client.root_dir
  local ok, id = compat.request(client, "kebab/related", params, function(err, result)
    if err then
      notify("related failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      emit("error", { error = err.message })
      return
    end
    local hits = type(result) == "table" and result.hits or {}
    local items = related.items(hits, root)
    local list = {
      title = title,
      items = items,
      context = { method = "kebab/related", bufnr = bufnr, params = params },
    }
    emit("related", { title = title, hits = hits, items = items, params = params })
    if #items == 0 then
      notify(("nothing related to %s in %s"):format(name,
        params.same_note and "the notes" or "other notes"), vim.log.levels.INFO)
      return
    end
    if opts.on_list then
      list.hits = hits
      opts.on_list(list)
    elseif opts.loclist then
      if api.nvim_win_is_valid(win) then
        vim.fn.setloclist(win, {}, " ", list)
        api.nvim_win_call(win, function()
          vim.cmd("lopen")
        end)
      end
    else
      vim.fn.setqflist({}, " ", list)
      vim.cmd("botright copen")
    end
  end, bufnr)
  if not ok then
    notify("the kebab server has stopped", vim.log.levels.ERROR)
    return nil
  end
  return id
end

-- status and reindex -----------------------------------------------------------------------

function M.status()
  local client = need_client()
  if not client then
    return
  end
  compat.request(client, "kebab/status", {}, function(err, result)
    if err then
      notify("status failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    emit("status", result)
    ui.show_status(result)
  end)
end

function M.reindex()
  local client = need_client()
  if not client then
    return
  end
  compat.request(client, "workspace/executeCommand", { command = "kebab.reindex", arguments = {} },
    function(err, result)
      if err then
        notify("reindex failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        notify("reindexing " .. table.concat((result or {}).reindexing or {}, ", "))
      end
    end)
end

-- setup ------------------------------------------------------------------------------------

local function commands()
  api.nvim_create_user_command("KebabAsk", function(o)
    M.ask(o.args, nil, { follow = o.bang })
  end, { nargs = "*", bang = true,
    desc = "kebab: ask the notes a new question (with !: a follow-up on the last answer)" })
  api.nvim_create_user_command("KebabFollow", function(o)
    M.follow(o.args)
  end, { nargs = "*", desc = "kebab: a follow-up on the last answer in this workspace" })
  api.nvim_create_user_command("KebabInsert", function(o)
    local range
    if o.range > 0 then
      local s, e = api.nvim_buf_get_mark(0, "<"), api.nvim_buf_get_mark(0, ">")
      if s[1] ~= o.line1 or e[1] ~= o.line2 then -- a line range typed by hand: whole lines
        s = { o.line1, 0 }
        e = { o.line2, #(api.nvim_buf_get_lines(0, o.line2 - 1, o.line2, false)[1] or "") }
      end
      range = { start = s, ["end"] = e }
    end
    M.insert(range)
  end, { range = true, desc = "kebab: answer the question under the cursor into the note" })
  api.nvim_create_user_command("KebabLink", function(o)
    local range
    if o.range > 0 then
      range = { start = { o.line1, 0 }, ["end"] = { o.line2, 0 } }
    end
    M.link(range)
  end, { range = true,
    desc = "kebab: link the notes related to this section (on a heading, or selected lines)" })
  api.nvim_create_user_command("KebabRelated", function(o)
    local k
    if o.args ~= "" then
      k = tonumber(o.args)
      if not k then
        notify("usage: :KebabRelated[!] [k], k a number from 1 to 50", vim.log.levels.WARN)
        return
      end
    end
    M.related({ k = k, same_note = o.bang or nil })
  end, { nargs = "?", bang = true,
    desc = "kebab: passages in other notes related to this section (with !: this note's too)" })
  api.nvim_create_user_command("KebabNew", function()
    M.new_thread()
  end, { desc = "kebab: forget the last answers: the next follow-up starts afresh" })
  api.nvim_create_user_command("KebabStatus", function()
    M.status()
  end, { desc = "kebab: index status" })
  api.nvim_create_user_command("KebabCancel", function()
    M.cancel()
  end, { desc = "kebab: cancel the running answer" })
  api.nvim_create_user_command("KebabReindex", function()
    M.reindex()
  end, { desc = "kebab: rebuild the index" })
end

function M.setup(opts)
  if not compat.supported then
    vim.notify("kebab.nvim needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if opts and opts.root_markers then -- lists replace, they do not merge by index
    M.config.root_markers = opts.root_markers
  end
  if opts and opts.filetypes then
    M.config.filetypes = opts.filetypes
  end
  ui.options = vim.tbl_extend("force", ui.options, M.config.window or {})
  local group = api.nvim_create_augroup(GROUP, { clear = true })
  server.start_for_notes(M.config, {
    ["$/progress"] = progress_handler,
    ["window/showMessage"] = show_message_handler,
  }, group)
  if M.config.commands then
    commands()
  end
end

return M
