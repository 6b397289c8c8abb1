-- Neovim's built-in LSP client (0.7 API: vim.lsp.start_client) driving the RelayLens
-- server on one .relay file, headless.  It acts and records; tests/test_second_client.py
-- decides what is right.
--
--   RELAYLENS_NVIM_PLAN=plan.json nvim --headless -u NONE -i NONE -n -c 'luafile scenario.lua'
--
-- plan.json: { "cmd": [server argv], "file": path, "out": path, "timeout_ms": N,
--              "hover": [line, col], "use": [line, col], "break": [line, col, text] }
-- Positions are 0-based; `col` counts bytes (the test's files are ASCII).  `hover` is on
-- an op call, `use` on a use of a `%N` local, and `break` inserts `text` to break a line.
--
-- Steps, each waiting with vim.wait on what a handler recorded (never a fixed sleep):
--   open        attach; the first publishDiagnostics; the first finished build
--   hover       vim.lsp.buf.hover(): the text of the floating window Neovim opens
--   definition  vim.lsp.buf.definition() from `use`: where the cursor lands
--   references  vim.lsp.buf.references(): the quickfix items
--   symbols     textDocument/documentSymbol
--   lenses      textDocument/codeLens through vim.lsp.codelens's handler: the lenses
--               Neovim stores for the buffer, and the virtual text it shows for them
--   virtual     relaylens/virtualDocument for the first lens's URI; relaylens/lineMap,
--               and textDocument/definition on its first located module.ll line
--   broken      insert `break.text`: vim.diagnostic.get() once that version is published
--   fixed       undo the insertion: diagnostics of that version, its build, its lenses
--   formatting  textDocument/formatting's edits, applied by vim.lsp.util: the buffer after
--   exit        vim.lsp.stop_client: the server's exit code
-- The observations, and the first error with its traceback, are written as JSON to
-- plan.out; Neovim then quits with status 0, or 1 after an error.

local plan = vim.json.decode(table.concat(vim.fn.readfile(os.getenv('RELAYLENS_NVIM_PLAN')), '\n'))
local timeout = plan.timeout_ms

local obs = { nvim = tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch,
              publishes = {}, builds = {}, progress = {}, messages = {}, steps = {} }
local client_id, bufnr

-- The step being run, so a timeout says what it was waiting for.
local function step(name)
  obs.steps[#obs.steps + 1] = name
end

local function wait_for(what, predicate)
  if not vim.wait(timeout, predicate, 20) then
    error(string.format('timed out after %d ms waiting for %s', timeout, what), 0)
  end
end

local function version()
  return vim.lsp.util.buf_versions[bufnr]
end

local function last_publish(v)
  for i = #obs.publishes, 1, -1 do
    if obs.publishes[i].version == v then
      return obs.publishes[i]
    end
  end
end

local function build_of(v)
  for _, b in ipairs(obs.builds) do
    if b.version == v and b.state == 'done' and b.current then
      return b
    end
  end
end

-- vim.diagnostic's view of the buffer: what a user sees.
local function shown_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    out[#out + 1] = { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
                      severity = d.severity, source = d.source, message = d.message }
  end
  return out
end

local function record_message(kind)
  return function(_, result)
    obs.messages[#obs.messages + 1] = { kind = kind, type = result.type, message = result.message }
    return vim.NIL
  end
end

local handlers = {
  ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
    obs.publishes[#obs.publishes + 1] = { version = result.version, count = #result.diagnostics }
    return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
  end,
  ['relaylens/buildFinished'] = function(_, result)
    obs.builds[#obs.builds + 1] = result
  end,
  ['$/progress'] = function(err, result, ctx, config)
    local value = result.value or {}
    obs.progress[#obs.progress + 1] = { token = result.token, kind = value.kind,
                                        title = value.title, message = value.message }
    return vim.lsp.handlers['$/progress'](err, result, ctx, config)
  end,
  ['window/logMessage'] = record_message('log'),
  ['window/showMessage'] = record_message('show'),
}

local function open()
  step('open')
  vim.cmd('edit ' .. vim.fn.fnameescape(plan.file))
  bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = 'relay'
  client_id = vim.lsp.start_client({
    name = 'relaylens',
    cmd = plan.cmd,
    root_dir = vim.fn.fnamemodify(plan.file, ':h'),
    handlers = handlers,
    on_exit = function(code, signal)
      obs.exit = { code = code, signal = signal }
    end,
  })
  if not client_id then
    error('vim.lsp.start_client could not start ' .. table.concat(plan.cmd, ' '), 0)
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  wait_for('initialize', function() return client.initialized or obs.exit ~= nil end)
  if obs.exit then
    error('the server exited during initialize: ' .. vim.inspect(obs.exit), 0)
  end
  obs.capabilities = client.server_capabilities
  wait_for('the diagnostics of the opened file', function() return last_publish(version()) end)
  obs.open = { version = version(), diagnostics = shown_diagnostics() }
  wait_for('the first build (relaylens/buildFinished)', function() return build_of(version()) end)
end

local function put_cursor(pos)
  vim.api.nvim_win_set_cursor(0, { pos[1] + 1, pos[2] })
end

local function hover()
  step('hover')
  put_cursor(plan.hover)
  local before = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do before[w] = true end
  vim.lsp.buf.hover()
  local float
  wait_for('the hover window', function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if not before[w] and vim.api.nvim_win_get_config(w).relative ~= '' then
        float = w
        return true
      end
    end
  end)
  obs.hover = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false)
  vim.api.nvim_win_close(float, true)
end

local function definition()
  step('definition')
  put_cursor(plan.use)
  local start = vim.api.nvim_win_get_cursor(0)
  vim.lsp.buf.definition()
  wait_for('the jump to the definition', function()
    local now = vim.api.nvim_win_get_cursor(0)
    return now[1] ~= start[1] or now[2] ~= start[2]
  end)
  local landed = vim.api.nvim_win_get_cursor(0)
  obs.definition = { line = landed[1] - 1, col = landed[2], buffer_is_file = vim.api.nvim_get_current_buf() == bufnr }
end

local function references()
  step('references')
  vim.fn.setqflist({}, 'r')
  local win = vim.api.nvim_get_current_win()
  put_cursor(plan.use)
  vim.lsp.buf.references({ includeDeclaration = true })
  wait_for('the references in the quickfix list', function() return #vim.fn.getqflist() > 0 end)
  obs.references = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    obs.references[#obs.references + 1] = { line = item.lnum - 1, col = item.col - 1, text = item.text }
  end
  vim.cmd('cclose')
  vim.api.nvim_set_current_win(win)
end

local function request(method, params)
  local client = vim.lsp.get_client_by_id(client_id)
  local answer, err = client.request_sync(method, params, timeout, bufnr)
  if not answer then
    error(method .. ': ' .. tostring(err), 0)
  end
  if answer.err then
    error(method .. ' answered an error: ' .. vim.inspect(answer.err), 0)
  end
  return answer.result
end

local function symbols()
  step('symbols')
  obs.symbols = request('textDocument/documentSymbol', { textDocument = vim.lsp.util.make_text_document_params(bufnr) })
end

-- textDocument/codeLens for the current version, answered through Neovim's own handler:
-- the lenses it stores for the buffer, and the virtual text it shows for them.
local function lenses()
  local client = vim.lsp.get_client_by_id(client_id)
  local asked = version()
  local answered = false
  client.request('textDocument/codeLens', { textDocument = vim.lsp.util.make_text_document_params(bufnr) },
    function(err, result, ctx, config)
      vim.lsp.codelens.on_codelens(err, result, ctx, config)
      answered = true
    end, bufnr)
  wait_for('the code lenses of version ' .. asked, function() return answered end)
  local stored, shown = {}, {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
    local command = lens.command or {}
    stored[#stored + 1] = { line = lens.range.start.line, title = command.title, command = command.command,
                            arguments = command.arguments }
  end
  local ns = vim.api.nvim_get_namespaces()['vim_lsp_codelens:' .. client_id]
  for _, mark in ipairs(ns and vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true }) or {}) do
    local text = {}
    for _, chunk in ipairs(mark[4].virt_text or {}) do text[#text + 1] = chunk[1] end
    shown[#shown + 1] = { line = mark[2], text = table.concat(text) }
  end
  return { version = asked, stored = stored, shown = shown }
end

-- The custom contracts of docs/lsp.md: the LLVM IR that the first lens names, and a
-- definition from a located module.ll line (relaylens/lineMap) back to the .relay file.
local function virtual_documents()
  step('virtual')
  local first -- the first lens that opens a document (not the profile's above @main)
  for _, lens in ipairs(obs.lenses.stored) do
    if not first and lens.command == 'relaylens.open' then first = lens end
  end
  if not (first and first.arguments) then
    error('no code lens with arguments to follow: ' .. vim.inspect(obs.lenses.stored), 0)
  end
  local uri = first.arguments[1]
  local doc = request('relaylens/virtualDocument', { uri = uri })
  local map = request('relaylens/lineMap', { uri = vim.uri_from_bufnr(bufnr) })
  if map == vim.NIL or not map or #map.lines == 0 then
    error('relaylens/lineMap gave no located module.ll line: ' .. vim.inspect(map), 0)
  end
  local pair = map.lines[1]
  local found = request('textDocument/definition', { textDocument = { uri = map.module },
                                                     position = { line = pair[1], character = 0 } })
  obs.virtual = { uri = uri, language = doc.languageId, text = doc.text, module = map.module,
                  functions = map.functions, llvm_line = pair[1], relay_line = pair[2], definition = found }
end

local function broken_then_fixed()
  step('broken')
  local at = plan['break']
  vim.api.nvim_buf_set_text(bufnr, at[1], at[2], at[1], at[2], { at[3] })
  wait_for('diagnostics on the broken line', function()
    return last_publish(version()) and #vim.diagnostic.get(bufnr) > 0
  end)
  obs.broken = { version = version(), diagnostics = shown_diagnostics() }
  step('fixed')
  vim.api.nvim_buf_set_text(bufnr, at[1], at[2], at[1], at[2] + #at[3], { '' })
  wait_for('the diagnostics of the fixed text', function() return last_publish(version()) end)
  obs.fixed = { version = version(), diagnostics = shown_diagnostics() }
  wait_for('the build of the fixed text', function() return build_of(version()) end)
  obs.fixed.lenses = lenses()
end

local function formatting()
  step('formatting')
  local before = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local edits = request('textDocument/formatting', vim.lsp.util.make_formatting_params())
  obs.formatting = { edits = edits }
  if type(edits) == 'table' then
    vim.lsp.util.apply_text_edits(edits, bufnr, 'utf-16')
  end
  local after = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  obs.formatting.before = table.concat(before, '\n')
  obs.formatting.after = table.concat(after, '\n')
  wait_for('the diagnostics of the formatted text', function() return last_publish(version()) end)
  obs.formatting.diagnostics = shown_diagnostics()
end

local function stop()
  step('exit')
  vim.lsp.stop_client(client_id)
  wait_for('the server to exit', function() return obs.exit ~= nil end)
end

local function scenario()
  open()
  hover()
  definition()
  references()
  symbols()
  step('lenses')
  obs.lenses = lenses()
  virtual_documents()
  broken_then_fixed()
  formatting()
  stop()
end

local ok, err = xpcall(scenario, debug.traceback)
if not ok then
  obs.error = err
  obs.lsp_log = vim.lsp.get_log_path()
end
vim.fn.writefile({ vim.json.encode(obs) }, plan.out)
vim.cmd(ok and 'qall!' or 'cquit! 1')
