-- Headless Neovim (0.7+) as a second real LSP client for the FuseLens server.
-- usage: LSP_CMD="python -m fuselens.server" nvim --headless --clean -u NONE -c "luafile probe.lua" FILE.py
-- Prints every diagnostic ("DIAG line:col source code message") and the code actions offered at the
-- first one ("ACTION title"); exits 0 if diagnostics arrived, 1 otherwise.
local file = vim.api.nvim_buf_get_name(0)
local bufnr = vim.api.nvim_get_current_buf()
vim.bo[bufnr].filetype = 'python'
local cmd = vim.split(assert(os.getenv('LSP_CMD'), 'set LSP_CMD'), ' ', { trimempty = true })
local client_id = vim.lsp.start_client({
  name = 'fuselens', cmd = cmd, root_dir = vim.fn.fnamemodify(file, ':h'),
  init_options = { settings = { debounceMs = 50 } },
  on_exit = function(code) io.stderr:write('server exited with ' .. code .. '\n') end,
})
vim.lsp.buf_attach_client(bufnr, client_id)
local got = vim.wait(tonumber(os.getenv('LSP_TIMEOUT_MS') or '20000'),
  function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
local diagnostics = vim.diagnostic.get(bufnr)
table.sort(diagnostics, function(a, b) return a.lnum < b.lnum end)
for _, d in ipairs(diagnostics) do
  local lsp = (d.user_data or {}).lsp or {}
  io.stdout:write(string.format('DIAG %d:%d %s %s %s\n', d.lnum, d.col, d.source or '?',
    tostring(d.code or lsp.code), (d.message:gsub('\n.*', ''))))
end
if got then
  local first = diagnostics[1]
  local lsp_diag = (first.user_data or {}).lsp
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = first.lnum, character = first.col },
              ['end'] = { line = first.end_lnum, character = first.end_col } },
    context = { diagnostics = { lsp_diag } },
  }
  local replies = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', params, 10000) or {}
  for _, reply in pairs(replies) do
    if reply.err then io.stdout:write('ACTIONERR ' .. vim.inspect(reply.err) .. '\n') end
    for _, action in ipairs(reply.result or {}) do io.stdout:write('ACTION ' .. action.title .. '\n') end
  end
else
  io.stderr:write('no diagnostics received\n')
end
vim.lsp.stop_client(client_id)
vim.wait(3000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
vim.cmd(got and 'qall!' or 'cquit')
