-- kebab's floating windows: the answer of `:KebabAsk` (streamed, then final with its sources)
-- and the index state of `:KebabStatus`. Each is a scratch buffer (filetype markdown) in a
-- centred float; `q` closes it and `<CR>` on a source line opens the cited lines.
--
-- The float shows Markdown as it reads, not as it is written: a link is its text, a footnote
-- reference `[^kb-2]` is `[2]`, `**bold**` is bold without its stars (a highlight). Nothing is
-- hidden with conceal, so the text that wraps is the text on screen: a concealed link target
-- still takes its width when a line wraps, and left a lone `.` on the next line.

local M = {}

local api = vim.api

M.options = { width = 88, max_height = 0.7, border = "rounded" }

local NS = api.nvim_create_namespace("kebab")

-- The plugin's own words around an answer, in the answer's language (answer.v1 `lang`, the
-- question's: "en" or "ko"): a Korean answer does not sit in English chrome. The words the
-- CLI writes too are its words (server/kebab/cli/render.py `WORDS`); `refusals` are for a
-- server that sends no `refusal_text` (older than answer.v1's refusal_text), the Korean ones
-- the server's own (server/kebab/rag/outcome.py `_WHY_KO`). The code itself is for tools
-- and never shown. Each `%s` / `%d` is filled in where the words are used.
local WORDS = {
  en = {
    not_answered = "Not answered.",
    closest = "Closest in your notes.",
    sources = "Sources",
    closest_passages = "Closest passages",
    nearest_passages = "Nearest passages",
    only = "Only notes matching",
    disagree = "Notes disagree",
    error = "Error",
    cancelled = "**Cancelled.** The answer stopped here.",
    failed = "kebab/ask failed",
    unknown_error = "unknown error",
    no_answer = "No answer.",
    refusals = {
      no_chunks = "Nothing is indexed to answer from.",
      score_gate = "No passage in the notes is close enough to the question.",
      llm_self_judge = "The notes do not hold enough evidence for an answer.",
      cancelled = "The answer was cancelled.",
      llm_error = "The model failed.",
    },
    building = "The index is still being built%s; ask again when it is done.",
    building_files = " (%d/%d files)",
    follow_up_to = "↪ follow-up to: %s",
    the_last_answer = "the last answer",
    the_given_conversation = "the given conversation",
    no_thread = "↪ no earlier answer in this workspace: asked as a new question",
    searching = "searching the notes",
    -- the footer
    answering = "answering…",
    answering_question = "answering: %s", -- :KebabInsert's progress note
    the_question = "the question",
    cancel = "<C-c> cancel",
    open = "<CR> open",
    close = "q close",
    n_sources = { "%d source", "%d sources" }, -- one, more
    seconds = "%.1f s",
    unsupported = "not supported by the notes",
    nothing_inserted = "nothing inserted",
    said_closest = "closest passages",
    said_not_answered = "not answered",
    still_building = "index still building",
    said_cancelled = "cancelled",
    said_error = "error",
    follow_up = "follow-up",
    -- said when :KebabInsert has put the answer in the note
    inserted = "answer inserted with %s",
    replaced = "answer replaced the earlier one, with %s",
    n_citations = { "%d citation", "%d citations" },
  },
  ko = {
    not_answered = "답하지 못했습니다.",
    closest = "노트에서 가장 가까운 곳.",
    sources = "출처",
    closest_passages = "가장 가까운 구절",
    nearest_passages = "가까운 구절",
    only = "이 노트에서만",
    disagree = "노트끼리 어긋납니다",
    error = "오류",
    cancelled = "**취소되었습니다.** 답이 여기서 멈췄습니다.",
    failed = "kebab/ask 실패",
    unknown_error = "알 수 없는 오류",
    no_answer = "답이 없습니다.",
    refusals = {
      no_chunks = "이 워크스페이스에는 아직 색인된 노트가 없습니다.",
      score_gate = "노트에서 가장 가까운 구절도 이 질문에 답하지 않습니다.",
      llm_self_judge = "찾은 구절에 답이 나와 있지 않습니다.",
      cancelled = "답변이 끝나기 전에 취소되었습니다.",
      llm_error = "모델 호출에 실패했습니다.",
    },
    building = "색인을 아직 만드는 중입니다%s. 끝난 뒤 다시 물어보세요.",
    building_files = "(파일 %d/%d개)",
    follow_up_to = "↪ 이전 질문에 이어서: %s",
    the_last_answer = "마지막 답",
    the_given_conversation = "주어진 대화",
    no_thread = "↪ 이 워크스페이스에 이전 답이 없어 새 질문으로 물었습니다",
    searching = "노트를 찾는 중",
    answering = "답하는 중…",
    answering_question = "답하는 중: %s",
    the_question = "이 질문",
    cancel = "<C-c> 취소",
    open = "<CR> 열기",
    close = "q 닫기",
    n_sources = { "출처 %d개", "출처 %d개" },
    seconds = "%.1f초",
    unsupported = "노트가 뒷받침하지 않음",
    nothing_inserted = "넣은 것 없음",
    said_closest = "가장 가까운 구절",
    said_not_answered = "답하지 못함",
    still_building = "색인 만드는 중",
    said_cancelled = "취소됨",
    said_error = "오류",
    follow_up = "이어진 질문",
    inserted = "답을 넣었습니다: 인용 %s",
    replaced = "앞서 넣은 답을 바꿨습니다: 인용 %s",
    n_citations = { "%d개", "%d개" },
  },
}

--- The words in language `lang` ("en" or "ko"); English for any other (an answer stored
--- before answer.v1 had `lang` has none, or vim.NIL).
function M.words(lang)
  return WORDS[lang] or WORDS.en
end

--- `n` things, as `forms` ({one, more}) count them: "1 source", "2 sources", "출처 2개".
function M.count(forms, n)
  return (n == 1 and forms[1] or forms[2]):format(n)
end

-- A UTF-8 character's code point (the character: one to four bytes).
local function code_point(ch)
  local b = { ch:byte(1, -1) }
  if #b == 1 then
    return b[1]
  elseif #b == 2 then
    return (b[1] % 32) * 64 + b[2] % 64
  elseif #b == 3 then
    return (b[1] % 16) * 4096 + (b[2] % 64) * 64 + b[3] % 64
  end
  return (b[1] % 8) * 262144 + (b[2] % 64) * 4096 + (b[3] % 64) * 64 + (b[4] or 0) % 64
end

-- Whether a character other than ASCII is a letter, near enough: not Latin-1's punctuation and
-- signs, general punctuation (… ‘ ’), arrows and symbols, CJK punctuation (、。「」), fullwidth
-- punctuation (？！), or an emoji.
local function letter(cp)
  return not (cp < 0xC0 or cp == 0xD7 or cp == 0xF7 or (cp >= 0x2000 and cp <= 0x2BFF)
    or (cp >= 0x3000 and cp <= 0x303F) or (cp >= 0xFE30 and cp <= 0xFE4F)
    or (cp >= 0xFF00 and cp <= 0xFF20) or cp >= 0x1F000)
end

--- `question` without the filter words at its start (server/kebab/filters.py: `#ops`,
--- `path:infra/`, `tag:x`, `status=draft`); all of it when it is nothing else.
local function without_filters(question)
  local words = vim.split(vim.trim(question), "%s+", { trimempty = true })
  local used = 0
  for _, w in ipairs(words) do
    local filter = w:match("^#[%a_\128-\255][%w_/%-\128-\255]*$") or w:match("^path:%S+$")
      or w:match("^tag:%S+$") or w:match("^[%w_%.%-\128-\255]+[!<>]?=[^=]")
    if not filter then
      break
    end
    used = used + 1
  end
  return (used == 0 or used == #words) and question or table.concat(words, " ", used + 1)
end

--- "ko" or "en": the language the server writes an answer to `question` in, by its rule
--- (server/kebab/text.py `is_korean`): at least a fifth of the question's words hold Hangul,
--- read without the filter words at its start (`path:infra/ #ops 백업은?` is Korean). A word
--- starts with a letter and goes on with letters, digits, `_`, `.` and `-`.
function M.question_lang(question)
  question = without_filters(question or "")
  local words, hangul = 0, 0
  local word, has = false, false
  local function done()
    if word then
      words, hangul = words + 1, hangul + (has and 1 or 0)
    end
    word, has = false, false
  end
  for ch in (question or ""):sub(1, 2000):gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    local cp = code_point(ch)
    local is_letter = cp < 128 and ch:match("%a") ~= nil or cp >= 128 and letter(cp)
    if is_letter or (word and (ch:match("[%w_%.%-]") ~= nil)) then
      word = true
      has = has or (cp >= 0xAC00 and cp <= 0xD7A3)
    else
      done()
    end
  end
  done()
  return words > 0 and hangul * 5 >= words and "ko" or "en"
end

--- An answer's language: its `lang` (answer.v1); for one stored before `lang`, its question's
--- (`asked` when the answer does not carry it): the server wrote its refusal in that language.
function M.answer_lang(r, asked)
  if r.lang == "ko" or r.lang == "en" then
    return r.lang
  end
  return M.question_lang(type(r.question) == "string" and r.question or asked)
end

--- The language of the words around an ask: the answer's (answer.v1 `lang`), and before there
--- is one, or for an answer stored before `lang`, the question's, as the server decides it: a
--- Korean question streams, is cancelled or fails in Korean too.
function M.lang(state)
  local r = state.result
  return type(r) == "table" and M.answer_lang(r, state.question) or M.question_lang(state.question)
end

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
  wo.conceallevel = 0 -- the text is already rendered for reading (M.readable)
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
--- cursor on the last line (streaming), otherwise it goes to the top. `highlights`: {line
--- (1-based), first byte (0-based), end byte, group} spans, as M.readable returns them. The
--- lines are wrapped to the float's width at spaces (M.wrap): a path or a flag is never cut at
--- its `/`, `-` or `.` as Vim's 'linebreak' would, and what is on screen is the buffer's text.
function Panel:set(lines, links, footer, follow, highlights)
  if not self:valid() then
    return
  end
  self.text = lines
  local width = M.size({ "" })
  local rows, row_links, row_highlights = M.wrap(lines, links or {}, highlights or {}, width)
  self.links = row_links
  vim.bo[self.buf].modifiable = true
  api.nvim_buf_set_lines(self.buf, 0, -1, false, rows)
  vim.bo[self.buf].modifiable = false
  api.nvim_buf_clear_namespace(self.buf, NS, 0, -1)
  for _, h in ipairs(row_highlights) do
    local mark = { end_col = h[3], hl_group = h[4] }
    pcall(api.nvim_buf_set_extmark, self.buf, NS, h[1] - 1, h[2], mark)
  end
  if api.nvim_win_is_valid(self.win) then
    local height
    width, height = M.size(rows)
    local cfg = vim.tbl_extend("force", M.geometry(width, height), { relative = "editor" })
    if footer and M.bordered() then
      cfg.footer = " " .. footer .. " "
      cfg.footer_pos = "right"
    end
    api.nvim_win_set_config(self.win, cfg)
    api.nvim_win_set_cursor(self.win, { follow and #rows or 1, 0 })
  end
end

--- The panel's text, one entry per line before wrapping.
function Panel:lines()
  if not self:valid() then
    return {}
  end
  return vim.deepcopy(self.text or api.nvim_buf_get_lines(self.buf, 0, -1, false))
end

--- The panel's rows as the buffer holds them (wrapped to the float's width).
function Panel:rows()
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

-- Markdown for reading ------------------------------------------------------------------------

local HL = {
  strong = "@markup.strong",
  italic = "@markup.italic",
  link = "@markup.link.label",
}

--- A line of Markdown as a person reads it, and highlights that stand in for the markup taken
--- out: `[text](target)` is text, `![alt](src)` is alt, a wiki link `[[#Heading]]` is Heading,
--- a footnote reference `[^kb-2]` (or `[^2]`) is [2], `**b**` / `__b__` is b in bold, `*i*` /
--- `_i_` is i in italics. Code spans stay as written.
--- @param line string
--- @return string text
--- @return {[1]: integer, [2]: integer, [3]: string}[] spans: first byte (0-based), end byte, group
function M.readable(line)
  local out, spans, len = {}, {}, 0
  local function put(text, group)
    if group and text ~= "" then
      spans[#spans + 1] = { len, len + #text, group }
    end
    out[#out + 1] = text
    len = len + #text
  end
  local function put_inner(text, group) -- the text of a link or of emphasis, itself rendered
    local inner, inner_spans = M.readable(text)
    local at = len
    put(inner, group)
    for _, sp in ipairs(inner_spans) do
      spans[#spans + 1] = { at + sp[1], at + sp[2], sp[3] }
    end
  end
  local i, n = 1, #line
  while i <= n do
    local c = line:sub(i, i)
    local s, e, a, b
    if c == "`" then
      local ticks = line:match("^`+", i)
      local close = line:find(ticks, i + #ticks, true)
      if close then
        s, e = i, close + #ticks - 1
        put(line:sub(s, e))
      else
        e = i + #ticks - 1
        put(ticks)
      end
    elseif c == "!" then
      s, e, a, b = line:find("^!%[([^%]]*)%]%(([^)]*)%)", i)
      if s then
        put_inner(a ~= "" and a or vim.trim(b), HL.link)
      end
    elseif c == "[" and line:find("^%[%[[^%]]-%]%]", i) then
      s, e, a = line:find("^%[%[([^%]]-)%]%]", i)
      put(M.wiki_text(a), HL.link)
    elseif c == "[" then
      s, e, a = line:find("^%[%^([^%]%s]+)%]", i)
      if s then
        put("[" .. (a:gsub("^kb%-", "")) .. "]", HL.link)
      else
        s, e, a, b = line:find("^%[([^%]]*)%]%(([^)]*)%)", i)
        if s then
          put_inner(a ~= "" and a or vim.trim(b), HL.link)
        end
      end
    elseif c == "_" and not (i > 1 and line:sub(i - 1, i - 1):match("[%w_]")) then
      s, e, a = line:find("^__([^%s_].-)__", i)
      if s and not line:sub(e + 1, e + 1):match("[%w_]") then
        put_inner(a, HL.strong)
      else
        s, e, a = line:find("^_([^%s_][^_]-)_", i)
        if s and (a:sub(-1):match("%s") or line:sub(e + 1, e + 1):match("[%w_]")) then
          s, e = nil, nil
        end
        if s then
          put_inner(a, HL.italic)
        end
      end
    elseif c == "*" then
      s, e, a = line:find("^%*%*([^%s*].-)%*%*", i)
      if s then
        put_inner(a, HL.strong)
      else
        local before = i > 1 and line:sub(i - 1, i - 1) or " "
        if not before:match("[%w*]") then
          s, e, a = line:find("^%*([^%s*][^*]-)%*", i)
          if s and a:sub(-1):match("%s") then
            s = nil
          end
          if s then
            put_inner(a, HL.italic)
          end
        end
      end
    end
    if e then
      i = e + 1
    else
      put(c)
      i = i + 1
    end
  end
  return table.concat(out), spans
end

--- An Obsidian wiki link's inside as it reads: its alias, else the note and heading it names
--- (`note#Heading` → `note › Heading`, `#Heading` → `Heading`).
function M.wiki_text(inner)
  local target, alias = inner:match("^([^|]*)|(.*)$")
  if alias and vim.trim(alias) ~= "" then
    return vim.trim(alias)
  end
  local note, heading = (target or inner):match("^([^#]*)#?(.*)$")
  local parts = {}
  for _, part in ipairs({ vim.trim(note or ""), vim.trim(heading or "") }) do
    if part ~= "" then
      parts[#parts + 1] = part
    end
  end
  return table.concat(parts, " › ")
end

--- Render `lines` for reading in place (M.readable), all but those in `raw` (a set of
--- 1-based line numbers); the highlights as Panel:set takes them.
function M.render_lines(lines, raw)
  local highlights = {}
  for i, line in ipairs(lines) do
    if not (raw and raw[i]) then
      local text, spans = M.readable(line)
      lines[i] = text
      for _, sp in ipairs(spans) do
        highlights[#highlights + 1] = { i, sp[1], sp[2], sp[3] }
      end
    end
  end
  return highlights
end

-- wrapping ------------------------------------------------------------------------------------

local function cells(text)
  return vim.fn.strdisplaywidth(text)
end

--- How a wrapped line's later rows start: a quote stays a quote, a list item's or a source's
--- text lines up after its marker, an indented line (a passage's excerpt) keeps its indentation.
local function continuation(line, width)
  if line:match("^> ") then
    return "> "
  end
  local lead = line:match("^%s*[-*+] ") or line:match("^%s*%d+[.)] ") or line:match("^%[[^%]]+%] ")
    or line:match("^ +")
  if lead and cells(lead) <= width / 3 then
    return string.rep(" ", cells(lead))
  end
  return ""
end

--- The byte length of the longest start of `text` that fits in `room` cells (one character
--- at least).
local function fitting(text, room)
  local k = vim.fn.strchars(text)
  while k > 1 and cells(vim.fn.strcharpart(text, 0, k)) > room do
    k = k - 1
  end
  return #vim.fn.strcharpart(text, 0, k)
end

--- One line cut into rows of at most `width` cells, at spaces; a word wider than a row is cut
--- where the row ends. Each row: {text, from, to, prefix}, `from`..`to` the bytes of `line`
--- it shows (0-based, end excluded) after its continuation `prefix`.
function M.wrap_line(line, width)
  if cells(line) <= width then
    return { { text = line, from = 0, to = #line, prefix = "" } }
  end
  local cont = continuation(line, width)
  local rows, prefix = {}, ""
  local from, to, used, gap = nil, nil, 0, nil
  local function flush()
    local text = prefix .. line:sub(from, to)
    rows[#rows + 1] = { text = text, from = from - 1, to = to, prefix = prefix }
    prefix, from, to, gap = cont, nil, nil, nil
    used = cells(prefix)
  end
  local i = 1
  while i <= #line do
    local s, e = line:find("^%s+", i)
    if s then
      if from == nil and #rows == 0 then -- the line's own indentation
        from, to, used = s, e, cells(line:sub(s, e))
      elseif from then
        gap = { s, e } -- taken only if the next word fits after it
      end
    else
      s, e = line:find("^%S+", i)
      local wide = cells(line:sub(s, e))
      local between = gap and cells(line:sub(gap[1], gap[2])) or 0
      if from and used + between + wide <= width then
        to, used, gap = e, used + between + wide, nil
      else
        if from and wide > width - cells(cont) then
          used, gap = used + between, nil -- wider than any row: cut it from here on
        elseif from then
          flush()
        end
        local at = s
        while used + cells(line:sub(at, e)) > width do
          local n = fitting(line:sub(at, e), math.max(1, width - used))
          from, to = from or at, at + n - 1
          flush()
          at = at + n
        end
        from, to, used = from or at, e, used + cells(line:sub(at, e))
      end
    end
    i = e + 1
  end
  if from then
    flush()
  end
  return rows
end

--- Lines wrapped to `width` (M.wrap_line), with their links and highlights moved onto the
--- rows they land on: a wrapped source opens from any of its rows.
function M.wrap(lines, links, highlights, width)
  local rows, row_links, row_highlights, of_line = {}, {}, {}, {}
  for lnum, line in ipairs(lines) do
    of_line[lnum] = {}
    for _, row in ipairs(M.wrap_line(line, width)) do
      rows[#rows + 1] = row.text
      row.index = #rows
      table.insert(of_line[lnum], row)
      row_links[#rows] = links[lnum]
    end
  end
  for _, h in ipairs(highlights) do
    for _, row in ipairs(of_line[h[1]] or {}) do
      local lo, hi = math.max(h[2], row.from), math.min(h[3], row.to)
      if lo < hi then
        row_highlights[#row_highlights + 1] =
          { row.index, #row.prefix + lo - row.from, #row.prefix + hi - row.from, h[4] }
      end
    end
  end
  return rows, row_links, row_highlights
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

--- The answer's markdown without its footnote definitions: the body the float shows (the
--- sources are listed from the citations).
function M.markdown_body(markdown)
  local body = {}
  for _, line in ipairs(split(markdown)) do
    if not line:match("^%[%^([^%]%s]+)%]:") then
      body[#body + 1] = line
    end
  end
  return trim_blank(body)
end

local function text_of(v) -- a JSON string field, nil when absent or null
  return type(v) == "string" and v or nil
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

--- The cited passages, each under the label Insert writes for it in the note the question was
--- asked from (answer.v1 `citations[].label`, the server's: `[^kb-2]`, read as [2]); `#marker`
--- for an answer from a server older than `label`.
local function list_sources(out, links, citations, root)
  for _, c in ipairs(citations) do
    local label = text_of(c.label) or ("#" .. tostring(c.marker or "?"))
    out[#out + 1] = source_line(c, label)
    links[#out] = { path = M.file_of(c, root), line = (M.span(c)) }
  end
end

-- a refusal's or an unsupported answer's nearest passages, so the reader still sees where to
-- look: each with the server's one-line excerpt under it (answer.v1 `candidates[].excerpt`,
-- shown as it is; none from an older server), which `<CR>` opens too
local function nearest_passages(out, links, raw, marks, r, root, w)
  if r.candidates and #r.candidates > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "## " .. (r.outcome == "closest" and w.closest_passages or w.nearest_passages)
    out[#out + 1] = ""
    for _, c in ipairs(r.candidates) do
      out[#out + 1] = source_line(c, nil)
      local link = { path = M.file_of(c, root), line = (M.span(c)) }
      links[#out] = link
      local excerpt = vim.trim(text_of(c.excerpt) or ""):gsub("%s+", " ")
      if excerpt ~= "" then
        out[#out + 1] = "  " .. excerpt
        links[#out] = link
        raw[#out] = true
        marks[#marks + 1] = { #out, HL.italic, 2 }
      end
    end
  end
end

local function elapsed(state, w)
  return w.seconds:format((vim.uv.hrtime() - state.started) / 1e9)
end

--- Why an answer was refused, in words: the server's `refusal_text`, else its answer text,
--- else words for the code, in the answer's language. Never the code itself (`score_gate`…),
--- which is for tools.
function M.refusal_words(r)
  for _, said in ipairs({ r.refusal_text, r.answer }) do
    if type(said) == "string" and vim.trim(said) ~= "" then
      return vim.trim(said)
    end
  end
  local w = M.words(M.answer_lang(r))
  local reason = r.refusal_reason
  return type(reason) == "string" and w.refusals[reason] or w.no_answer
end

--- The answer was made while the index was still being built: what to tell the person, or nil.
function M.building_words(r)
  local b = type(r) == "table" and r.index_building or nil
  if type(b) ~= "table" then
    return nil
  end
  if type(b.message) == "string" and vim.trim(b.message) ~= "" then
    return vim.trim(b.message)
  end
  local w = M.words(M.answer_lang(r))
  local files = ""
  if type(b.files_done) == "number" and type(b.files_total) == "number" then
    files = w.building_files:format(b.files_done, b.files_total)
  end
  return w.building:format(files)
end

local BUILDING_HL = "DiagnosticWarn"
local NOTE_HL = "Comment"

--- The lines, links, footer and highlights of an ask in its current state. The lines are
--- rendered for reading (M.readable), except the question, which is shown as it was asked.
--- The plugin's own words are in the answer's language (M.lang).
function M.answer_view(state)
  local out, links, raw, marks = {}, {}, {}, {} -- marks: {line, group, first byte (0-based)}
  local function mark(group) -- the whole of the last line
    marks[#marks + 1] = { #out, group }
  end
  local w = M.words(M.lang(state))
  local function footed(...) -- the footer's parts, " · " between them
    return table.concat({ ... }, " · ")
  end
  if state.follows then
    -- the earlier question; else (true) a thread whose question is not known, or one given
    local follows = type(state.follows) == "string" and state.follows
      or (state.follows_given and w.the_given_conversation or w.the_last_answer)
    out[#out + 1] = w.follow_up_to:format(follows)
    raw[#out] = true
    mark(NOTE_HL)
  elseif state.follow_wanted then
    out[#out + 1] = w.no_thread
    raw[#out] = true
    mark(NOTE_HL)
  end
  for _, line in ipairs(split(state.question)) do
    out[#out + 1] = "> " .. line
    raw[#out] = true
  end
  out[#out + 1] = ""
  local footer
  if state.status == "running" then
    if state.text == "" then
      out[#out + 1] = "*" .. (state.phase or w.searching) .. " …*"
    else
      append(out, state.text)
    end
    footer = footed(w.answering, w.cancel, w.close)
  elseif state.status == "done" then
    local r = state.result
    local building = M.building_words(r)
    if building then -- the answer may be worse than it will be: say so first
      out[#out + 1] = "⚠ " .. building
      raw[#out] = true
      mark(BUILDING_HL)
      out[#out + 1] = ""
    end
    if type(r.filters) == "string" and r.filters ~= "" then -- the notes it was limited to
      out[#out + 1] = w.only .. ": " .. r.filters
      raw[#out] = true
      mark(NOTE_HL)
      out[#out + 1] = ""
    end
    for _, c in ipairs(r.conflicts or {}) do -- shown before the answer, as in every client
      out[#out + 1] = ("**⚠ %s:** [#%d] %s vs [#%d] %s — %s"):format(
        w.disagree, c.a, c.a_source or "", c.b, c.b_source or "", c.detail or "")
      out[#out + 1] = ""
    end
    if r.grounded then
      vim.list_extend(out, M.markdown_body(r.markdown or r.answer or ""))
      out[#out + 1] = ""
      out[#out + 1] = "## " .. w.sources
      out[#out + 1] = ""
      list_sources(out, links, r.citations or {}, state.root)
      footer = footed(M.count(w.n_sources, #(r.citations or {})), elapsed(state, w),
        (r.model or {}).backend or "?", w.open, w.close)
    elseif type(r.unsupported) == "table" and #r.unsupported > 0 then
      -- the model answered, but the notes do not hold it: its words under a plain warning
      out[#out + 1] = "⚠ " .. M.refusal_words(r)
      out[#out + 1] = ""
      append(out, r.answer or "")
      nearest_passages(out, links, raw, marks, r, state.root, w)
      footer = state.inserting and footed(w.unsupported, w.nothing_inserted, w.close)
        or footed(w.unsupported, w.close)
    else
      -- closest: passages that may hold it, no claim made; not answered: nothing in the notes
      local closest = r.outcome == "closest"
      out[#out + 1] = ("**%s** %s"):format(closest and w.closest or w.not_answered,
        M.refusal_words(r))
      if type(r.error) == "string" and r.error ~= "" then
        out[#out + 1] = ""
        out[#out + 1] = w.error .. ": " .. r.error
      end
      nearest_passages(out, links, raw, marks, r, state.root, w)
      local said = closest and w.said_closest or w.said_not_answered
      footer = state.inserting and footed(said, w.nothing_inserted, w.close)
        or footed(said, w.close)
    end
    if building then
      footer = footed(w.still_building, footer)
    end
  elseif state.status == "cancelled" then
    if state.text ~= "" then
      append(out, state.text)
      out[#out + 1] = ""
    end
    out[#out + 1] = w.cancelled
    footer = footed(w.said_cancelled, w.close)
  else
    if state.text ~= "" then
      append(out, state.text)
      out[#out + 1] = ""
    end
    out[#out + 1] = ("**%s:** %s"):format(w.failed, tostring(state.error or w.unknown_error))
    footer = footed(w.said_error, w.close)
  end
  if state.follows then
    footer = footed(w.follow_up, footer)
  end
  local highlights = M.render_lines(out, raw)
  for _, m in ipairs(marks) do
    highlights[#highlights + 1] = { m[1], m[3] or 0, #out[m[1]], m[2] }
  end
  return out, links, footer, highlights
end

function M.render_answer(state)
  if not state.panel or not state.panel:valid() then
    return
  end
  local lines, links, footer, highlights = M.answer_view(state)
  state.panel:set(lines, links, footer, state.status == "running", highlights)
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
  local lines = M.status_view(s)
  local highlights = M.render_lines(lines)
  panel:set(lines, {}, "q close", false, highlights)
  return panel
end

return M
