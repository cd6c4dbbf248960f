"""The editor configurations in editors/ (Neovim, Helix, Zed): each parses, and each
starts `torchlint server` for Python files with the same settings keys as the VS Code
extension. Lua is checked with luac (apt `lua5.4`) and run against a stub `vim` table;
Rust is parsed with rustfmt; both are skipped where the tool is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

EDITORS = Path(__file__).resolve().parent.parent / "editors"
LUA_FILES = [EDITORS / "neovim" / "init.lua", EDITORS / "neovim" / "lsp" / "torchlint.lua"]
SERVER_SETTINGS = {"select", "ignore", "unsafeFixes", "verify"}
# The settings the VS Code extension sends (editors/vscode/src/settings.ts, serverSettings).
VSCODE_SERVER_SETTINGS = SERVER_SETTINGS | {"run", "fixOnSave"}


def _tool(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"{' / '.join(names)} not installed (apt-get install lua5.4 / rustup)")


@pytest.mark.parametrize("path", LUA_FILES, ids=lambda p: p.name)
def test_lua_configs_are_valid_lua(path):
    proc = subprocess.run([_tool("luac5.4", "luac"), "-p", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# Neovim's API as far as the configs use it: record what they configure, print it as JSON.
_STUB = r"""
local configured, enabled, autocmds = {}, {}, {}
vim = {
  lsp = { config = function(name, cfg) configured[name] = cfg end,
          enable = function(name) enabled[#enabled + 1] = name end },
  api = { nvim_create_autocmd = function(event, opts) autocmds[#autocmds + 1] = event end },
}
local result = dofile(arg[1])
local function encode(v)
  if type(v) == "table" then
    local parts, is_list = {}, #v > 0 or next(v) == nil
    for k, x in pairs(v) do
      if type(x) ~= "function" then
        parts[#parts + 1] = is_list and encode(x) or string.format("%q:%s", tostring(k), encode(x))
      end
    end
    if not is_list then table.sort(parts) end
    return (is_list and "[" or "{") .. table.concat(parts, ",") .. (is_list and "]" or "}")
  elseif type(v) == "string" then return string.format("%q", v)
  else return tostring(v) end
end
print(encode({ configured = configured, enabled = enabled, autocmds = autocmds, returned = result or {} }))
"""


def _run_lua(path: Path) -> dict:
    proc = subprocess.run([_tool("lua5.4", "lua"), "-", str(path)], input=_STUB, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _check_server_config(config: dict) -> None:
    assert config["cmd"] == ["torchlint", "server"]
    assert config["filetypes"] == ["python"]
    assert "pyproject.toml" in config["root_markers"]
    assert set(config["init_options"]["settings"]) == SERVER_SETTINGS
    assert config["settings"]["torchlint"] == config["init_options"]["settings"]
    assert config["init_options"]["settings"]["verify"] is False


def test_neovim_init_configures_and_enables_the_server():
    seen = _run_lua(EDITORS / "neovim" / "init.lua")
    _check_server_config(seen["configured"]["torchlint"])
    assert seen["enabled"] == ["torchlint"]
    assert seen["autocmds"] == ["LspAttach"]  # the fix-all key map


def test_neovim_lsp_file_returns_the_same_config():
    returned = _run_lua(EDITORS / "neovim" / "lsp" / "torchlint.lua")["returned"]
    _check_server_config(returned)
    assert returned == _run_lua(EDITORS / "neovim" / "init.lua")["configured"]["torchlint"]


def test_helix_languages_toml():
    config = tomllib.loads((EDITORS / "helix" / "languages.toml").read_text(encoding="utf-8"))
    server = config["language-server"]["torchlint"]
    assert [server["command"], *server["args"]] == ["torchlint", "server"]
    assert set(server["config"]["settings"]) == SERVER_SETTINGS
    python = next(lang for lang in config["language"] if lang["name"] == "python")
    assert "torchlint" in python["language-servers"]


def _jsonc(path: Path) -> dict:
    """Zed's settings are JSON with `//` comments; these files have them on lines of their own."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


def test_zed_settings_and_extension_name_the_same_server():
    settings = _jsonc(EDITORS / "zed" / "settings.json")
    binary = settings["lsp"]["torchlint"]["binary"]
    assert [binary["path"], *binary["arguments"]] == ["torchlint", "server"]
    assert set(settings["lsp"]["torchlint"]["initialization_options"]["settings"]) == SERVER_SETTINGS
    assert settings["languages"]["Python"]["language_servers"][0] == "torchlint"
    extension = tomllib.loads((EDITORS / "zed" / "extension.toml").read_text(encoding="utf-8"))
    assert extension["language_servers"]["torchlint"]["languages"] == ["Python"]
    cargo = tomllib.loads((EDITORS / "zed" / "Cargo.toml").read_text(encoding="utf-8"))
    assert cargo["lib"]["crate-type"] == ["cdylib"] and "zed_extension_api" in cargo["dependencies"]
    source = (EDITORS / "zed" / "src" / "lib.rs").read_text(encoding="utf-8")
    assert 'LspSettings::for_worktree("torchlint"' in source and '"server"' in source


def test_zed_extension_source_parses():
    proc = subprocess.run([_tool("rustfmt"), "--edition", "2021", "--emit", "stdout", str(EDITORS / "zed" / "src" / "lib.rs")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_settings_keys_are_the_vscode_extensions():
    source = (EDITORS / "vscode" / "src" / "settings.ts").read_text(encoding="utf-8")
    body = source[source.index("export function serverSettings"):]
    body = body[:body.index("\n}\n")]
    for key in VSCODE_SERVER_SETTINGS:
        assert f"    {key}: settings.{key}," in body, key


def test_the_configured_command_is_a_torchlint_command(run_cli):
    code, out, _ = run_cli("server", "--help")
    assert code == 0 and "language server" in out.lower()


def test_vscode_ci_script_skips_with_a_message_without_node(tmp_path):
    """.ci/run calls editors/vscode/ci.sh: without node/npm it must skip, not fail."""
    proc = subprocess.run([shutil.which("bash") or "bash", str(EDITORS / "vscode" / "ci.sh")], capture_output=True, text=True,
                          env={"PATH": str(tmp_path), "HOME": str(tmp_path)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "SKIPPED: node and npm are not installed" in proc.stdout


def test_vscode_extension_lock_file_is_committed_and_matches_the_manifest():
    manifest = json.loads((EDITORS / "vscode" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((EDITORS / "vscode" / "package-lock.json").read_text(encoding="utf-8"))
    root = lock["packages"][""]
    assert root["dependencies"] == manifest["dependencies"]
    assert root["devDependencies"] == manifest["devDependencies"]
