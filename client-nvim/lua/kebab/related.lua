-- `:KebabRelated`: the passages in other notes closest in meaning to the section under the
-- cursor (the server's `kebab/related`), as a quickfix list. Pure helpers here; the request
-- itself is made in init.lua, with the plugin's client.

local ui = require("kebab.ui")

local M = {}

M.SEP = " › "
M.WORDS = 72 -- display cells of a passage's first words in an entry

--- The heading path of the section holding line `lnum` (1-based) of `bufnr`, from its ATX
--- headings (`## Title`), skipping front matter and fenced code: { "Home server backups",
--- "Schedule" }. Empty above the first heading.
function M.section_at(bufnr, lnum)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, lnum, false)
  local levels = {}
  local first = 1
  if lines[1] and lines[1]:match("^%-%-%-%s*$") then -- YAML front matter
    first = #lines + 1
    for i = 2, #lines do
      if lines[i]:match("^%-%-%-%s*$") or lines[i]:match("^%.%.%.%s*$") then
        first = i + 1
        break
      end
    end
  end
  local fence
  for i = first, #lines do
    local line = lines[i]
    local marks = line:match("^ ? ? ?(```+)") or line:match("^ ? ? ?(~~~+)")
    if fence then
      if marks and marks:sub(1, 1) == fence:sub(1, 1) and #marks >= #fence
        and line:match("^%s*[`~]+%s*$") then
        fence = nil
      end
    elseif marks then
      fence = marks
    else
      local hashes, title = line:match("^ ? ? ?(#+)%s+(.-)%s*$")
      if hashes and #hashes <= 6 then
        title = vim.trim((title:gsub("%s+#+$", "")))
        if title ~= "" then
          levels[#hashes] = ui.readable(title)
          for deeper = #hashes + 1, 6 do
            levels[deeper] = nil
          end
        end
      end
    end
  end
  local path = {}
  for level = 1, 6 do
    if levels[level] then
      path[#path + 1] = levels[level]
    end
  end
  return path
end

--- A hit's heading path as one string.
function M.heading(hit)
  local h = hit.heading_path
  if type(h) == "table" and #h > 0 then
    return table.concat(h, M.SEP)
  elseif type(h) == "string" and h ~= "" then
    return h
  end
  return (hit.title ~= nil and hit.title ~= "") and hit.title or (hit.path or "")
end

--- The first words of a passage as it reads: its heading lines, list and quote markers and
--- table pipes dropped, Markdown links as their text, no emphasis marks, whitespace collapsed,
--- cut at a word to `cells` cells.
function M.first_words(text, cells)
  cells = cells or M.WORDS
  local kept, fence = {}, false
  for _, line in ipairs(vim.split(text or "", "\n", { plain = true })) do
    if line:match("^%s*```") or line:match("^%s*~~~") then
      fence = not fence
    elseif not line:match("^ ? ? ?#+%s") and not line:match("^%s*|[-:| ]+|%s*$") then
      line = line:gsub("^[%s>]*", "") -- block quotes
      line = line:gsub("^[-*+]%s+%[[ xX]%]%s+", ""):gsub("^[-*+]%s+", ""):gsub("^%d+[.)]%s+", "")
      if line:match("^|.*|%s*$") then -- a table row: its cells
        line = line:gsub("^|", ""):gsub("|%s*$", ""):gsub("%s*|%s*", ", ")
      end
      kept[#kept + 1] = line
    end
  end
  local words = ui.readable(table.concat(kept, " "))
  words = vim.trim((words:gsub("%s+", " ")))
  if vim.fn.strdisplaywidth(words) <= cells then
    return words
  end
  local n = vim.fn.strchars(words)
  local cut = vim.fn.strcharpart(words, 0, n)
  while n > 0 and vim.fn.strdisplaywidth(cut) > cells - 1 do
    n = n - 1
    cut = vim.fn.strcharpart(words, 0, n)
  end
  local at_space = cut:match("^(.*%S)%s+%S*$") -- back to the last whole word
  if at_space and vim.fn.strdisplaywidth(at_space) > cells / 2 then
    cut = at_space
  end
  return (cut:gsub("[%s%p]+$", "")) .. "…"
end

--- One quickfix entry per hit: path:line, "heading › path — first words of the text".
function M.items(hits, root)
  local items = {}
  for _, hit in ipairs(hits or {}) do
    local file
    if type(hit.uri) == "string" and hit.uri ~= "" then
      file = vim.uri_to_fname(hit.uri)
    elseif root then
      file = root .. "/" .. hit.path
    else
      file = hit.path
    end
    local words = M.first_words(hit.text)
    local text = M.heading(hit)
    if hit.linked == true then -- its note links to this one, or this one to it
      text = text .. " (linked)"
    end
    if words ~= "" then
      text = text .. " — " .. words
    end
    items[#items + 1] = {
      filename = file,
      lnum = hit.start_line or 1,
      end_lnum = hit.end_line,
      text = text,
      user_data = {
        kebab = "related",
        path = hit.path,
        heading_path = hit.heading_path,
        score = hit.score,
        start_line = hit.start_line,
        end_line = hit.end_line,
      },
    }
  end
  return items
end

return M
