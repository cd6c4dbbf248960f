-- torchlint's language server for Neovim 0.11+ (`:help lsp-config`).
-- Put this file in a `lsp/` directory on your 'runtimepath' (for example
-- ~/.config/nvim/lsp/torchlint.lua) and call `vim.lsp.enable("torchlint")` in init.lua;
-- or pass the same table to `vim.lsp.config("torchlint", {...})` (see ../init.lua).
return {
  -- The torchlint of the active virtual environment, else the one on PATH.
  cmd = { "torchlint", "server" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "torchlint.toml", ".torchlint.toml", ".git" },
  -- Sent at start (`initializationOptions`) and as the answer to the server's
  -- `workspace/configuration` request for the "torchlint" section: the same keys as the
  -- VS Code extension's settings. Empty lists leave the choice to the project's config.
  init_options = {
    settings = { select = {}, ignore = {}, unsafeFixes = false, verify = false },
  },
  settings = {
    torchlint = { select = {}, ignore = {}, unsafeFixes = false, verify = false },
  },
}
