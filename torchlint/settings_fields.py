"""Generated from the option table (torchlint/options.py) by scripts/generate_settings.py:
edit the table, not this file. `Settings`' fields (config.py adds the methods), the command
line's overrides, and how each row's config value and flag make its field."""

from __future__ import annotations

import os

from torchlint.fast_dataclass import dataclass, field
from torchlint.options import DEFAULT_EXCLUDES, DEFAULT_LINT_TIMEOUT, DEFAULT_MAX_FILE_SIZE, flag_size

TYPE_CHECKING = False  # typing only for mypy: importing it costs a one-file run ~3 ms
if TYPE_CHECKING:
    from typing import Any, Optional


@dataclass
class SettingsFields:
    """The fields of `Settings` (torchlint/config.py adds its methods). A field a row fills
    holds that row's checked config value under its flag; the others are computed in
    config.py from the rows named beside them."""

    root: str  # the config file's directory (relative patterns are relative to it)
    config_path: Optional[str] = None  # the config file
    enabled: frozenset[str] = frozenset()  # select, extend-select, ignore
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()  # per-file-ignores
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # options, torch-version, module-bases
    fixable: frozenset[str] = frozenset()  # fixable, extend-fixable, unfixable
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES  # exclude
    extend_exclude: tuple[str, ...] = ()  # extend-exclude
    respect_gitignore: bool = True  # respect-gitignore
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # max-file-size
    lint_timeout: float = DEFAULT_LINT_TIMEOUT  # lint-timeout
    cache_dir: Optional[str] = None  # cache-dir
    verify_memory: Optional[int] = None  # verify-memory
    verify_budget: Optional[float] = None  # verify-budget
    verify_timeout: Optional[float] = None  # verify-timeout
    fix: bool = False  # fix
    unsafe_fixes: bool = False  # unsafe-fixes


class CliOverrides:
    """The values the command line gives for settings, one per row with a flag
    (`max_file_size="10MB"`); unset ones are None, lists that add up (extend-*, ignore) empty."""

    def __init__(
        self, *,
        select: Optional[list[str]] = None,
        extend_select: Optional[list[str]] = None,
        ignore: Optional[list[str]] = None,
        exclude: Optional[list[str]] = None,
        extend_exclude: Optional[list[str]] = None,
        respect_gitignore: Optional[bool] = None,
        max_file_size: Optional[str] = None,
        lint_timeout: Optional[float] = None,
        verify_memory: Optional[int] = None,
        verify_budget: Optional[float] = None,
        verify_timeout: Optional[float] = None,
        torch_version: Optional[str] = None,
        fix: Optional[bool] = None,
        unsafe_fixes: Optional[bool] = None,
    ) -> None:
        self.select = select
        self.extend_select: list[str] = extend_select if extend_select is not None else []
        self.ignore: list[str] = ignore if ignore is not None else []
        self.exclude = exclude
        self.extend_exclude: list[str] = extend_exclude if extend_exclude is not None else []
        self.respect_gitignore = respect_gitignore
        self.max_file_size = max_file_size
        self.lint_timeout = lint_timeout
        self.verify_memory = verify_memory
        self.verify_budget = verify_budget
        self.verify_timeout = verify_timeout
        self.torch_version = torch_version
        self.fix = fix
        self.unsafe_fixes = unsafe_fixes

    def given(self) -> frozenset[str]:
        """Config keys whose value the command line gives."""
        values = (
            ("select", self.select),
            ("extend-select", self.extend_select),
            ("ignore", self.ignore),
            ("exclude", self.exclude),
            ("extend-exclude", self.extend_exclude),
            ("respect-gitignore", self.respect_gitignore),
            ("max-file-size", self.max_file_size),
            ("lint-timeout", self.lint_timeout),
            ("verify-memory", self.verify_memory),
            ("verify-budget", self.verify_budget),
            ("verify-timeout", self.verify_timeout),
            ("torch-version", self.torch_version),
            ("fix", self.fix),
            ("unsafe-fixes", self.unsafe_fixes),
        )
        return frozenset(key for key, value in values if value not in (None, []))


def row_fields(where: str, values: dict[str, Any], cli: CliOverrides, root: str) -> dict[str, Any]:
    """The fields that one row each fills: the flag's value, else the config's (checked by
    options.check_table), else the default; lists that add up join both; paths are relative to `root`."""
    return {
        "exclude": tuple(cli.exclude if cli.exclude is not None else values.get("exclude", DEFAULT_EXCLUDES)),
        "extend_exclude": tuple(values.get("extend-exclude", ())) + tuple(cli.extend_exclude),
        "respect_gitignore": cli.respect_gitignore if cli.respect_gitignore is not None else values.get("respect-gitignore", True),
        "max_file_size": flag_size(where, cli.max_file_size) if cli.max_file_size is not None else values.get("max-file-size", DEFAULT_MAX_FILE_SIZE),
        "lint_timeout": cli.lint_timeout if cli.lint_timeout is not None else values.get("lint-timeout", DEFAULT_LINT_TIMEOUT),
        "cache_dir": os.path.join(root, values["cache-dir"]) if "cache-dir" in values else None,
        "verify_memory": cli.verify_memory if cli.verify_memory is not None else values.get("verify-memory", None),
        "verify_budget": cli.verify_budget if cli.verify_budget is not None else values.get("verify-budget", None),
        "verify_timeout": cli.verify_timeout if cli.verify_timeout is not None else values.get("verify-timeout", None),
        "fix": cli.fix if cli.fix is not None else values.get("fix", False),
        "unsafe_fixes": cli.unsafe_fixes if cli.unsafe_fixes is not None else values.get("unsafe-fixes", False),
    }
