"""What an editor tells `torchlint server` about its settings, as ruff-vscode does: an object
`{"select": [...], "ignore": [...], "unsafeFixes": bool, ...}` given in the `initialize`
request's `initializationOptions.settings`, answered to `workspace/configuration` for the
`torchlint` section (per workspace folder), or pushed with `workspace/didChangeConfiguration`.

They act like the command line's flags: `select`/`ignore` override the project's config the
way `--select`/`--ignore` do, and `unsafeFixes` offers unsafe fixes as quick fixes and in the
fix-all action (like `--unsafe-fixes`). Settings the server does not act on (`run`,
`fixOnSave`: the client's; `verify`: never run from the editor) are accepted and ignored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from torchlint.config import CliOverrides, ConfigError
from torchlint.selection import SelectionError, parse_list

SECTION = "torchlint"


@dataclass(frozen=True)
class ClientSettings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False

    def overrides(self) -> CliOverrides:
        """The settings as command-line overrides; an empty `select` keeps the project's.
        Raises ConfigError for an unknown code, naming the editor setting to change."""
        values = {}
        for key, codes in (("select", self.select), ("ignore", self.ignore)):
            try:
                values[key] = parse_list(codes)
            except SelectionError as exc:
                raise ConfigError(f"the editor's `{SECTION}.{key}` setting: {exc}") from None
        return CliOverrides(select=values["select"] or None, ignore=values["ignore"])


def parse_settings(value: Any) -> tuple[ClientSettings, list[str]]:
    """Settings from what the client sent, and one line per value that was ignored because
    it had the wrong type (the server logs them; a typo must not stop the server). Accepts
    the `{"settings": {...}}` wrapper of initializationOptions and a bare object."""
    if isinstance(value, dict) and isinstance(value.get("settings"), dict):
        value = value["settings"]
    if value is None:
        return ClientSettings(), []
    if not isinstance(value, dict):
        return ClientSettings(), [f"settings: expected an object, got {type(value).__name__}; using the defaults"]
    problems: list[str] = []
    select = _codes(value, "select", problems)
    ignore = _codes(value, "ignore", problems)
    unsafe = value.get("unsafeFixes", False)
    if not isinstance(unsafe, bool):
        problems.append(f"settings: unsafeFixes must be true or false, got {unsafe!r}; using false")
        unsafe = False
    return ClientSettings(select, ignore, unsafe), problems


def _codes(value: dict, key: str, problems: list[str]) -> tuple[str, ...]:
    codes = value.get(key)
    if codes is None:
        return ()
    if isinstance(codes, str):
        codes = [codes]
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        problems.append(f"settings: {key} must be a list of rule codes, got {codes!r}; ignored")
        return ()
    return tuple(c.strip() for c in codes if c.strip())


class SettingsStore:
    """The client's settings: the global ones, and per workspace folder (by its URI) those
    `workspace/configuration` answered. A file takes its innermost folder's."""

    def __init__(self) -> None:
        self.default = ClientSettings()
        self.folders: dict[str, ClientSettings] = {}

    def for_uri(self, uri: str) -> ClientSettings:
        best: Optional[str] = None
        for folder in self.folders:
            prefix = folder.rstrip("/") + "/"
            if uri.startswith(prefix) and (best is None or len(folder) > len(best)):
                best = folder
        return self.folders[best] if best is not None else self.default
