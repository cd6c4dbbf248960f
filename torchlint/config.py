"""Configuration: `[tool.torchlint]` in pyproject.toml, or torchlint.toml /
.torchlint.toml (same keys, no table prefix). The closest config file to each linted
file wins; the command line beats files (ruff's semantics)."""

from __future__ import annotations

import os
import re
import sys

from torchlint import settings_reads
from torchlint.fast_dataclass import dataclass
from torchlint.options import (DEFAULT_EXCLUDES, DEFAULT_TORCH_VERSION, DEFAULT_VERIFY_BUDGET,  # noqa: F401 (re-exported)
                               DEFAULT_VERIFY_MEMORY_MIB, DEFAULT_VERIFY_TIMEOUT, OPTIONS_BY_KEY, ConfigError,
                               check_table, check_torch_version, expect_list)
from torchlint.globs import translate
from torchlint.project_torch import project_torch_floor
from torchlint.rules import lazy
from torchlint.safe_io import RefusedFile, is_within, read_regular_file
from torchlint.selection import SelectionError, SelectionLayer, parse_list, resolve
from torchlint.settings_fields import CliOverrides, SettingsFields, row_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Union

    PathLike = Union[str, os.PathLike[str]]

CONFIG_FILES = (".torchlint.toml", "torchlint.toml", "pyproject.toml")
MAX_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass  # again: the generated __init__ must call this class's __post_init__
class Settings(SettingsFields):
    """Effective settings for the files under one config file (or the defaults). The fields come
    from the option table (torchlint/settings_fields.py, generated)."""

    def __post_init__(self) -> None:
        self._root = os.path.abspath(self.root)
        self._exclude = GlobSet((*self.exclude, *self.extend_exclude))
        self._per_file = _per_file_matchers(self.per_file_ignores, self.enabled)

    def relative(self, path: PathLike) -> str:
        """`path` relative to the settings root, as a posix string (no symlink resolution)."""
        absolute = os.path.abspath(path)
        if absolute == self._root:
            return ""
        if absolute.startswith(self._root + os.sep):
            return absolute[len(self._root) + 1:].replace(os.sep, "/")
        return absolute.replace(os.sep, "/")

    def codes_for(self, path: PathLike) -> frozenset[str]:
        """Enabled codes for one file, after per-file-ignores."""
        if not self._per_file:
            return self.enabled
        rel = self.relative(path)
        ignored: set[str] = set()
        for globs, codes in self._per_file:
            if not codes <= ignored and globs.match_path(rel):
                ignored.update(codes)
        return self.enabled - ignored if ignored else self.enabled

    def is_excluded(self, path: PathLike) -> bool:
        """For a path named on the command line: any of its components may match."""
        return self._exclude.match_path(self.relative(path))

    def is_excluded_entry(self, parent_rel: str, name: str) -> bool:
        """For an entry met while walking: its parents were already checked."""
        return self._exclude.match_entry(parent_rel, name)


def _per_file_matchers(per_file_ignores: tuple[tuple[str, frozenset[str]], ...], enabled: frozenset[str]
                       ) -> list[tuple["GlobSet", frozenset[str]]]:
    """per-file-ignores as (globs, enabled codes they ignore), compiled once per config file.
    Patterns that ignore the same codes share one combined GlobSet; when there are more such
    groups than enabled codes, there is one GlobSet per code instead. Either way a file is
    matched against at most min(patterns, enabled codes) regexes, not one per pattern."""
    by_codes: dict[frozenset[str], list[str]] = {}
    for pattern, codes in per_file_ignores:
        hit = frozenset(c for c in enabled if any(c.startswith(p) or p == "ALL" for p in codes))
        if hit:
            by_codes.setdefault(hit, []).append(pattern)
    if len(by_codes) > len(enabled):
        by_code: dict[str, list[str]] = {}
        for codes, patterns in by_codes.items():
            for code in codes:
                by_code.setdefault(code, []).extend(patterns)
        return [(GlobSet(tuple(patterns)), frozenset((code,))) for code, patterns in sorted(by_code.items())]
    return [(GlobSet(tuple(patterns)), codes) for codes, patterns in by_codes.items()]


class GlobSet:
    """Exclude-style globs (ruff's syntax: torchlint/globs.py), compiled once. A pattern without
    '/' matches any path component (`build`, `*.pyi`), like ruff; one with '/' matches the path
    relative to the root or a directory above it."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        names, literal_names, paths = [], set(), []
        for pattern in patterns:
            pattern = pattern.rstrip("/")
            if pattern.startswith("./"):
                pattern = pattern[2:]
            if not pattern:
                continue
            if "/" in pattern:
                paths.append(translate(pattern) + r"(?:/.*)?\Z")
            elif any(ch in pattern for ch in "*?[{\\"):
                names.append(translate(pattern) + r"\Z")
            else:
                literal_names.add(pattern)
        self._literal = frozenset(literal_names)
        self._names = re.compile("|".join(names), re.S) if names else None
        self._paths = re.compile("|".join(paths), re.S) if paths else None

    def _match_name(self, name: str) -> bool:
        return name in self._literal or (self._names is not None and self._names.match(name) is not None)

    def match_entry(self, parent_rel: str, name: str) -> bool:
        if self._match_name(name):
            return True
        return self._paths is not None and self._paths.match(f"{parent_rel}/{name}" if parent_rel else name) is not None

    def match_path(self, rel: str) -> bool:
        if any(self._match_name(part) for part in rel.split("/") if part):
            return True
        return self._paths is not None and self._paths.match(rel) is not None


def parse_torch_version(value: str) -> tuple[int, int]:
    major, minor = value.split(".")
    return int(major), int(minor)


def load_toml(path: PathLike) -> dict[str, Any]:
    # Imported here: a run with no config file (most one-file runs) never parses TOML.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        # A config file in an untrusted checkout may be a link to /proc or a device.
        data = read_regular_file(str(path), MAX_CONFIG_BYTES)
        settings_reads.note_read(str(path), data)
        return tomllib.loads(data.decode("utf-8"))
    except RefusedFile as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}); TOML files must be UTF-8") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None


def read_config_table(path: PathLike) -> Optional[dict[str, Any]]:
    """The torchlint table of a config file; None for a pyproject.toml without one."""
    data = load_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: `tool` must be a table ([tool.torchlint]), got {type(tool).__name__}")
        table = tool.get("torchlint")
        if table is None:
            return None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.torchlint] must be a table")
        return table
    return data


def _validate_options(path: str, table: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `options` must be a table of per-rule tables")
    out: dict[str, dict[str, Any]] = {}
    if table:
        from torchlint import catalog  # imports every rule: only for a config with rule options
    for rule_key, values in table.items():
        rule = catalog.static_rule(rule_key)
        if rule is None:
            raise ConfigError(f"{path}: options.{rule_key}: unknown rule (use a code like TL501 or a name like mean-reduction-under-ddp)")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: options.{rule_key} must be a table")
        for key, value in values.items():
            opt = rule.options.get(key)
            if opt is None:
                known = ", ".join(sorted(rule.options)) or "none"
                raise ConfigError(f"{path}: options.{rule_key}: unknown option `{key}` (known: {known})")
            problem = opt.problem(value)
            if problem is not None:
                raise ConfigError(f"{path}: options.{rule_key}.{key} {problem}")
        out.setdefault(rule.code, {}).update(values)
    return out


def settings_from_table(path: Optional[str], table: dict[str, Any], cli: CliOverrides,
                        root: str) -> Settings:
    """The settings for one config file's table (`{}`: the defaults) under the command line's
    overrides. Every key is checked by its row of the option table (torchlint/options.py)."""
    where = path or "<defaults>"
    values = check_table(where, table, cli.given())
    return Settings(
        root=root, config_path=path, enabled=frozenset(_enabled(where, values, cli)),
        per_file_ignores=_per_file_ignores(where, values.get("per-file-ignores", {})),
        options=_rule_options(where, values, cli, root), fixable=_fixable(where, values),
        **row_fields(where, values, cli, root),
    )


def _selectors(where: str, values: dict[str, Any], key: str) -> list[str]:
    try:
        return parse_list(values.get(key, OPTIONS_BY_KEY[key].default))
    except SelectionError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _enabled(where: str, values: dict[str, Any], cli: CliOverrides) -> set[str]:
    file_layer = SelectionLayer(select=_selectors(where, values, "select") if "select" in values else None,
                                extend_select=_selectors(where, values, "extend-select"),
                                ignore=_selectors(where, values, "ignore"))
    cli_layer = SelectionLayer(select=cli.select, extend_select=cli.extend_select, ignore=cli.ignore)
    return resolve([file_layer, cli_layer])


def _per_file_ignores(where: str, table: dict[str, Any]) -> tuple[tuple[str, frozenset[str]], ...]:
    per_file: list[tuple[str, frozenset[str]]] = []
    for pattern, codes in table.items():
        try:
            per_file.append((pattern, frozenset(parse_list(expect_list(where, f"per-file-ignores.{pattern}", codes)))))
        except SelectionError as exc:
            raise ConfigError(f"{where}: per-file-ignores.{pattern}: {exc}") from None
    return tuple(per_file)


def _rule_options(where: str, values: dict[str, Any], cli: CliOverrides, root: str) -> dict[str, dict[str, Any]]:
    """`options` per rule code, plus the project-wide keys that rules take as options."""
    options = _validate_options(where, values.get("options", {}))
    torch_version = cli.torch_version or values.get("torch-version") or project_torch_floor(root, load_toml) \
        or DEFAULT_TORCH_VERSION
    module_bases = values.get("module-bases", [])
    for code, rule in lazy.by_code().items():  # the index: no rule is imported
        if "torch-version" in rule.option_keys:
            options.setdefault(code, {}).setdefault("torch-version", torch_version)
        if module_bases and "module-bases" in rule.option_keys:
            options.setdefault(code, {}).setdefault("module-bases", module_bases)
    return options


def _fixable(where: str, values: dict[str, Any]) -> frozenset[str]:
    return resolve_fixable(_selectors(where, values, "fixable"), _selectors(where, values, "extend-fixable"),
                           _selectors(where, values, "unfixable"))


def resolve_fixable(fixable: list[str], extend: list[str], unfixable: list[str]) -> frozenset[str]:
    """Codes matched by `fixable` or `extend-fixable` and not by `unfixable`."""
    def matches(selectors: list[str], code: str) -> bool:
        return any(s == "ALL" or code.startswith(s) for s in selectors)
    return frozenset(code for code in lazy.static_codes()
                     if matches(fixable + extend, code) and not matches(unfixable, code))


class ConfigResolver:
    """Finds the settings for each file: `--config` or `--isolated` fix one for all files;
    otherwise the closest config file above the file, cached per directory. Directories are
    resolved strings (os.path, not pathlib: a one-file run never imports pathlib, ~4 ms)."""

    def __init__(self, cli: CliOverrides, config_path: Optional[PathLike] = None, isolated: bool = False,
                 cwd: Optional[PathLike] = None) -> None:
        self.cli = cli
        self.cwd = os.path.realpath(cwd if cwd is not None else os.getcwd())
        self._by_dir: dict[str, Settings] = {}
        self._by_config: dict[Optional[str], Settings] = {}
        self.fixed: Optional[Settings] = None
        if isolated:
            self.fixed = settings_from_table(None, {}, cli, self.cwd)
        elif config_path is not None:
            config = os.fspath(config_path)
            if not os.path.isfile(config):
                raise ConfigError(f"--config {config}: no such file")
            table = read_config_table(config)
            if table is None:
                raise ConfigError(f"--config {config}: has no [tool.torchlint] table")
            self.fixed = settings_from_table(config, table, cli, os.path.dirname(os.path.realpath(config)))
        # Settings for paths not under any config: the defaults, rooted at cwd, unless
        # the working directory itself sits under a config.
        self.default = self.fixed or self.for_directory(self.cwd)

    def for_directory(self, directory: PathLike) -> Settings:
        if self.fixed is not None:
            return self.fixed
        resolved = os.path.realpath(directory)
        found = self._by_dir.get(resolved)
        if found is not None:
            return found
        trail = []
        current: Optional[str] = resolved
        settings: Optional[Settings] = None
        while current is not None:
            if current in self._by_dir:
                settings = self._by_dir[current]
                break
            trail.append(current)
            config = _config_in(current, self.cwd)
            if config is not None:
                settings = self._load(config[0], config[1])
                break
            parent = os.path.dirname(current)
            current = parent if parent != current else None
        if settings is None:
            settings = self._load(None, {})
        for d in trail:
            self._by_dir[d] = settings
        return settings

    def for_file(self, path: PathLike) -> Settings:
        return self.for_directory(os.path.dirname(path) or ".")

    def _load(self, path: Optional[str], table: dict[str, Any]) -> Settings:
        if path in self._by_config:
            return self._by_config[path]
        root = os.path.dirname(path) if path is not None else self.cwd
        settings = settings_from_table(path, table, self.cli, root)
        self._by_config[path] = settings
        return settings


def _config_in(directory: str, cwd: str) -> Optional[tuple[str, dict[str, Any]]]:
    for name in CONFIG_FILES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            # A committed `pyproject.toml -> ~/.aws/credentials` must not be read, nor its
            # values quoted in an error: a discovered config may link only within its own
            # directory or the directory torchlint runs in (`--config` is the user's choice).
            if os.path.islink(candidate) and not is_within(os.path.realpath(candidate), [directory, cwd]):
                raise ConfigError(f"{candidate}: the config file is a symlink to a file outside the project; "
                                  f"not read (pass --config to use it)")
            table = read_config_table(candidate)
            if table is not None:
                return candidate, table
    return None



