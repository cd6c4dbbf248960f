//! Registers `torchlint server` as a Python language server in Zed. The binary is
//! `lsp.torchlint.binary` from the settings when given, else `torchlint` on the worktree's
//! PATH (which includes an activated virtual environment).

use zed_extension_api::{self as zed, settings::LspSettings, LanguageServerId, Result};

struct TorchlintExtension;

impl zed::Extension for TorchlintExtension {
    fn new() -> Self {
        TorchlintExtension
    }

    fn language_server_command(
        &mut self,
        _language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree("torchlint", worktree)
            .ok()
            .and_then(|settings| settings.binary);
        let command = binary
            .as_ref()
            .and_then(|b| b.path.clone())
            .or_else(|| worktree.which("torchlint"))
            .ok_or_else(|| "torchlint is not on PATH: pip install \"torchlint[lsp]\", or set lsp.torchlint.binary.path".to_string())?;
        let args = binary
            .and_then(|b| b.arguments)
            .unwrap_or_else(|| vec!["server".to_string()]);
        Ok(zed::Command {
            command,
            args,
            env: worktree.shell_env(),
        })
    }
}

zed::register_extension!(TorchlintExtension);
