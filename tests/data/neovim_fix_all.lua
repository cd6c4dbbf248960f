-- Headless Neovim (0.7+, the API Debian 12 ships) driving `torchlint server`: open a file,
-- wait for its diagnostics, apply the `source.fixAll.torchlint` code action, stop the
-- server, and write what happened as JSON to $TL_OUT. tests/test_neovim.py runs it.
local root, out = vim.env.TL_ROOT, vim.env.TL_OUT
local result = { codes = {}, lines = {}, exit_code = vim.NIL, error = vim.NIL }
local exit_code = nil

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(result) }, out)
  vim.cmd("qa!")
end

local client_id = vim.lsp.start_client({
  name = "torchlint",
  cmd = { vim.env.TL_PYTHON, "-m", "torchlint", "server" },
  root_dir = root,
  init_options = { settings = { select = { "TL108", "TL601" } } },
  on_exit = function(code) exit_code = code end,
})
vim.cmd("edit " .. vim.fn.fnameescape(root .. "/train.py"))
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, client_id)

if not vim.wait(90000, function() return #vim.diagnostic.get(buf) >= 2 end, 50) then
  result.error = "no diagnostics within 90 s"
  return finish()
end
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local lsp = d.user_data and d.user_data.lsp or {}
  table.insert(result.codes, d.code or lsp.code)
end
table.sort(result.codes)

local params = {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = { start = { line = 0, character = 0 }, ["end"] = { line = vim.api.nvim_buf_line_count(buf), character = 0 } },
  context = { diagnostics = {}, only = { "source.fixAll.torchlint" } },
}
local responses = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 90000) or {}
for _, response in pairs(responses) do
  for _, action in ipairs(response.result or {}) do
    if action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
    end
  end
end
result.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

vim.lsp.stop_client(client_id)
vim.wait(30000, function() return exit_code ~= nil end, 50)
result.exit_code = exit_code == nil and vim.NIL or exit_code
finish()
