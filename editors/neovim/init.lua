-- torchlint in Neovim 0.11+, without plugins: add this to ~/.config/nvim/init.lua.
vim.lsp.config("torchlint", {
  cmd = { "torchlint", "server" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "torchlint.toml", ".torchlint.toml", ".git" },
  init_options = { settings = { select = {}, ignore = {}, unsafeFixes = false, verify = false } },
  settings = { torchlint = { select = {}, ignore = {}, unsafeFixes = false, verify = false } },
})
vim.lsp.enable("torchlint")

-- <leader>tf: apply torchlint's fix-all action to the buffer (when the server offers it);
-- quick fixes and "Disable TLxxx for this line" are under `vim.lsp.buf.code_action()` (gra).
vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client == nil or client.name ~= "torchlint" then
      return
    end
    vim.keymap.set("n", "<leader>tf", function()
      vim.lsp.buf.code_action({ context = { only = { "source.fixAll.torchlint" }, diagnostics = {} }, apply = true })
    end, { buffer = args.buf, desc = "torchlint: fix all" })
  end,
})
