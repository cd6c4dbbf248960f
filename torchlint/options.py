"""The one table of torchlint's settings. Each row names a `[tool.torchlint]` key, its type,
default, command-line flag and help; from the table come the config validation, the
command-line overrides (`CliOverrides`), the README's configuration example and the JSON
schema shipped for editors (`torchlint/data/schema.json`, `scripts/generate_settings.py`).

Security limits carry a `ceiling`: a config file travels with the code it configures (a pull
request can edit it), so it may only lower them; raising one takes the command-line flag.
Flags without a key (`--verify-unsandboxed`) are command-line only: no config can set them."""

from __future__ import annotations

import re

from torchlint.budget import DEFAULT_LINT_TIMEOUT, MIN_LINT_TIMEOUT
from torchlint.fast_dataclass import dataclass
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, format_size, parse_size

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox",
    ".torchlint_cache", ".venv", ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out",
    "build", "dist", "node_modules", "site-packages", "venv",
)
# The security limits' built-in values. torchlint.verify.runner holds the same numbers (a test checks).
DEFAULT_VERIFY_MEMORY_MIB = 2048
DEFAULT_VERIFY_BUDGET = 900.0
DEFAULT_VERIFY_TIMEOUT = 120.0
# The torch release that `torch-version` defaults to: what migration rules (TL9xx) treat as
# the oldest torch the code must still run on. See rules_docs/TL901-deprecated-torch-api.md.
DEFAULT_TORCH_VERSION = "2.4"
_TORCH_VERSION = r"^[0-9]+\.[0-9]+$"  # compiled when a config sets one (by `re`)


class ConfigError(Exception):
    """Bad configuration: the CLI prints it and exits 2."""


if TYPE_CHECKING:
    Validator = Callable[[str, "Option", Any], Any]


@dataclass(frozen=True)
class Option:
    """One setting: its key, type, default, validation and flag."""

    key: str  # the config key, and the flag's name when there is one
    kind: str  # "list", "bool", "path", "size", "int", "seconds", "version", "table": the JSON schema's type
    default: Any  # the built-in value, as the docs show it (None: unset)
    help: str  # one line for the docs and the schema
    example: str  # the README example's line, `key = value  # comment` ("" for none)
    validate: Validator  # config value -> checked value (raises ConfigError saying what to change)
    flag: bool = False  # whether `--<key>` exists (on `check`), overriding the config
    flag_help: str = ""  # the flag's --help text
    ceiling: Optional[float] = None  # a security limit: a config may only lower it
    minimum: Optional[float] = None
    # The `Settings` field this row fills by itself (torchlint/settings_fields.py is generated
    # from these): its type and default, as Python source. "": the row feeds a field that
    # several rows fill together (DERIVED_FIELDS), computed in config.py.
    field: str = ""
    field_default: str = ""

    @property
    def attr(self) -> str:
        return self.key.replace("-", "_")

    @property
    def adds_up(self) -> bool:
        """A list the command line adds to the config's (extend-*, ignore) instead of replacing."""
        return self.kind == "list" and self.default == []

    @property
    def replaced_by_flag(self) -> bool:
        """A flag's scalar value replaces the config's, which is then not read: a config above a
        ceiling is no error when the flag raises it. Lists and booleans are always checked."""
        return self.flag and self.kind not in ("list", "bool")


def _list(where: str, option: Option, value: Any) -> list[str]:
    return expect_list(where, option.key, value)


def expect_list(where: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {type(value).__name__}: {value!r}")
    return value


def _bool(where: str, option: Option, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{option.key}` must be true or false, got {value!r}")
    return value


def _path(where: str, option: Option, value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigError(f"{where}: `{option.key}` must be a non-empty string path")
    return value


def _table(where: str, option: Option, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        what = "a table of glob = [codes]" if option.key == "per-file-ignores" else "a table of per-rule tables"
        raise ConfigError(f"{where}: `{option.key}` must be {what}")
    return value


def _size(where: str, option: Option, value: Any) -> int:
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: `{option.key}`: {exc}") from None
    if option.ceiling is not None and size > option.ceiling:
        above_limit(where, option.key, value, format_size(int(option.ceiling)))
    return size


def _number(kind: type, what: str) -> Validator:
    def validate(where: str, option: Option, value: Any) -> Any:
        import math  # a shared library: loaded only when a config sets a number

        assert option.minimum is not None and option.ceiling is not None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and value >= option.minimum and (kind is float or isinstance(value, int))
        if not ok:
            raise ConfigError(f"{where}: `{option.key}` must be {what} (at least {option.minimum:g}), got {value!r}")
        if value > option.ceiling:
            above_limit(where, option.key, value, f"{option.ceiling:g}")
        return kind(value)
    return validate


def _version(where: str, option: Option, value: Any) -> str:
    return check_torch_version(value, f"{where}: `{option.key}`")


def check_torch_version(value: Any, where: str) -> str:
    """`"2.4"`: major.minor, as a string (a TOML float would turn 2.10 into 2.1)."""
    if not isinstance(value, str) or not re.match(_TORCH_VERSION, value):
        raise ConfigError(f"{where} must be a string \"MAJOR.MINOR\" such as \"2.4\", got {value!r}")
    return value


def flag_size(where: str, value: str) -> int:
    """`--max-file-size`'s value in bytes (raises ConfigError)."""
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: `max-file-size`: {exc}") from None


def above_limit(where: str, key: str, value: Any, limit: str) -> None:
    raise ConfigError(f"{where}: `{key}` = {value!r} is above the built-in {limit}; a config file can only "
                      f"lower this security limit. Pass --{key} on the command line to raise it")


def _o(key: str, kind: str, default: Any, help: str, example: str, validate: Validator, **more: Any) -> Option:
    return Option(key, kind, default, help, example, validate, **more)


SECONDS = "a number of seconds"
# In the order the README's example shows them (and in which a config file is checked).
OPTIONS: tuple[Option, ...] = (
    _o("select", "list", None, "Rule codes or prefixes to enable (TL1, TL101, ALL); replaces the default set.",
       'select = ["TL"]            # default: every rule that is on by default', _list, flag=True,
       flag_help="Comma-separated rule codes or prefixes to enable (TL1, TL101, ALL); replaces the default set."),
    _o("extend-select", "list", [], "Rule codes or prefixes to enable in addition to the selected ones.",
       'extend-select = ["TL207"]', _list, flag=True,
       flag_help="Rule codes or prefixes to enable in addition to the selected ones."),
    _o("ignore", "list", [], "Rule codes or prefixes to disable.", 'ignore = ["TL501"]', _list, flag=True,
       flag_help="Rule codes or prefixes to disable."),
    _o("exclude", "list", list(DEFAULT_EXCLUDES), "Globs to exclude (replaces the default excludes).", "",
       _list, flag=True,
       flag_help="Comma-separated globs to exclude (replaces the default excludes).",
       field="tuple[str, ...]", field_default="DEFAULT_EXCLUDES"),
    _o("extend-exclude", "list", [], "Globs to exclude in addition.", 'extend-exclude = ["generated/"]', _list,
       flag=True, flag_help="Comma-separated globs to exclude in addition.",
       field="tuple[str, ...]", field_default="()"),
    _o("respect-gitignore", "bool", True, "Skip files that .gitignore ignores.", "respect-gitignore = true", _bool,
       flag=True, flag_help="Skip files that .gitignore ignores (default: on).",
       field="bool", field_default="True"),
    _o("max-file-size", "size", "5MB", "Skip (and report) files larger than this, e.g. 5MB; a config can only "
       "lower it.", 'max-file-size = "5MB"      # larger files are reported (TL000), not read (notebooks: 10x for '
       'outputs; code cells: 1x)', _size, flag=True,
       flag_help="Skip (and report) files larger than this, e.g. 5MB (default: 5 MiB).",
       ceiling=DEFAULT_MAX_FILE_SIZE,
       field="int", field_default="DEFAULT_MAX_FILE_SIZE"),
    _o("lint-timeout", "seconds", DEFAULT_LINT_TIMEOUT, "CPU seconds one file may take to lint; a config can only "
       "lower it.", "lint-timeout = 60          # CPU seconds per file; a slower file is reported (TL000), not "
       "linted (config can only lower it)", _number(float, SECONDS), flag=True,
       flag_help="CPU seconds one file may take to lint; a slower file is reported as TL000 and skipped "
       "(default 60; config: lint-timeout, which can only lower it).", ceiling=DEFAULT_LINT_TIMEOUT,
       minimum=MIN_LINT_TIMEOUT,
       field="float", field_default="DEFAULT_LINT_TIMEOUT"),
    _o("cache-dir", "path", ".torchlint_cache", "Cache directory, relative to the config file.",
       'cache-dir = ".torchlint_cache"', _path,
       field="Optional[str]", field_default="None"),
    _o("verify-memory", "int", DEFAULT_VERIFY_MEMORY_MIB, "MiB the --verify worker's processes may use together; "
       "a config can only lower it.", "verify-memory = 2048       # MiB for the --verify worker's process tree",
       _number(int, "a whole number of MiB"), flag=True,
       flag_help="MiB the --verify worker's processes may use together (default 2048; config: verify-memory).",
       ceiling=DEFAULT_VERIFY_MEMORY_MIB, minimum=256,
       field="Optional[int]", field_default="None"),
    _o("verify-budget", "seconds", DEFAULT_VERIFY_BUDGET, "Seconds all of --verify may take; a config can only "
       "lower it.", "verify-budget = 900        # seconds for all of --verify", _number(float, SECONDS), flag=True,
       flag_help="Seconds all of --verify may take; findings left then are skipped (default 900; config: verify-budget).",
       ceiling=DEFAULT_VERIFY_BUDGET, minimum=1.0,
       field="Optional[float]", field_default="None"),
    _o("verify-timeout", "seconds", DEFAULT_VERIFY_TIMEOUT, "Seconds one probe may run; a config can only lower it.",
       "verify-timeout = 120       # seconds for one --verify run", _number(float, SECONDS), flag=True,
       flag_help="Seconds one probe may run before it counts as an error (default 120; config: verify-timeout).",
       ceiling=DEFAULT_VERIFY_TIMEOUT, minimum=1.0,
       field="Optional[float]", field_default="None"),
    _o("torch-version", "version", None, 'The oldest torch the code must run on ("2.4"); unset: the project\'s own '
       "`torch>=X.Y`, else 2.4.", 'torch-version = "2.4"      # oldest torch the code must run on (TL9xx, TL601); '
       "unset: the\n                           # project's own `torch>=X.Y` in pyproject.toml, else 2.4",
       _version, flag=True,
       flag_help='The oldest torch the code must run on ("2.4"): decides what the TL9xx migration rules call deprecated.'),
    _o("module-bases", "list", [], "Extra base classes whose subclasses are nn.Modules.",
       "module-bases = []          # extra base classes whose subclasses are nn.Modules (beyond\n"
       "                           # Lightning, HF PreTrainedModel, diffusers ModelMixin, timm/torchvision)", _list),
    _o("fix", "bool", False, "Apply fixes, like --fix.", "fix = false                # like --fix", _bool, flag=True,
       flag_help="Apply fixes (default: the `fix` config key, off).",
       field="bool", field_default="False"),
    _o("unsafe-fixes", "bool", False, "Also apply fixes marked unsafe, like --unsafe-fixes.",
       "unsafe-fixes = false       # like --unsafe-fixes", _bool, flag=True,
       flag_help="Also apply fixes marked unsafe (they may change behaviour; see each rule's Fix safety).",
       field="bool", field_default="False"),
    _o("fixable", "list", ["ALL"], "Rules whose fixes may be applied.",
       'fixable = ["ALL"]          # rules whose fixes may be applied ...', _list),
    _o("unfixable", "list", [], "Rules whose fixes are never applied.", 'unfixable = ["TL701"]      # ... minus these',
       _list),
    _o("extend-fixable", "list", [], "Rules whose fixes may be applied, in addition to `fixable`.",
       "extend-fixable = []", _list),
    _o("per-file-ignores", "table", {}, "Glob = [codes]: rules not to run on the files a glob matches.",
       '[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL1"]', _table),
    _o("options", "table", {}, "Per-rule options: [tool.torchlint.options.<rule name or code>].", "", _table),
)
OPTIONS_BY_KEY = {option.key: option for option in OPTIONS}
KNOWN_KEYS = frozenset(OPTIONS_BY_KEY)
# The `Settings` fields that no single row fills: (attribute, type, default, what fills it).
# config.py computes them; the verify-* fields (rows) stay None when unset, so --verify
# applies its own built-in limits.
DERIVED_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("root", "str", "", "the config file's directory (relative patterns are relative to it)"),
    ("config_path", "Optional[str]", "None", "the config file"),
    ("enabled", "frozenset[str]", "frozenset()", "select, extend-select, ignore"),
    ("per_file_ignores", "tuple[tuple[str, frozenset[str]], ...]", "()", "per-file-ignores"),
    ("options", "dict[str, dict[str, Any]]", "field(default_factory=dict)", "options, torch-version, module-bases"),
    ("fixable", "frozenset[str]", "frozenset()", "fixable, extend-fixable, unfixable"),
)


def check_table(where: str, table: dict[str, Any], overridden: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every key of a config table checked by its option's validator, in table order; keys the
    command line overrides with a scalar value (`overridden`) are not read at all."""
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"{where}: unknown key `{key}` (known keys: {', '.join(sorted(KNOWN_KEYS))})")
    return {option.key: option.validate(where, option, table[option.key]) for option in OPTIONS
            if option.key in table and not (option.replaced_by_flag and option.key in overridden)}


# -- what the table generates besides the checks: docs and the JSON schema -------------------

def toml_example() -> str:
    """The README's `[tool.torchlint]` example: one line per option, then the sub-tables."""
    keys = [option.example for option in OPTIONS if option.example and option.kind != "table"]
    tables = [option.example for option in OPTIONS if option.example and option.kind == "table"]
    return "\n\n".join(["[tool.torchlint]\n" + "\n".join(keys), *tables]) + "\n"


def _schema_type(option: Option) -> dict[str, Any]:
    strings = {"type": "array", "items": {"type": "string"}}
    if option.kind == "list":
        return strings
    if option.kind == "bool":
        return {"type": "boolean"}
    if option.kind == "path":
        return {"type": "string", "minLength": 1}
    if option.kind == "version":
        return {"type": "string", "pattern": _TORCH_VERSION}
    if option.kind == "size":
        return {"anyOf": [{"type": "string", "pattern": r"^\s*[0-9.]+\s*([KkMmGg][Ii]?)?[Bb]?\s*$"},
                          {"type": "integer", "minimum": 1, "maximum": option.ceiling}]}
    if option.kind in ("int", "seconds"):
        return {"type": "integer" if option.kind == "int" else "number", "minimum": option.minimum,
                "maximum": option.ceiling}
    if option.key == "per-file-ignores":
        return {"type": "object", "additionalProperties": strings}
    return {"type": "object", "properties": _rule_option_schemas(), "additionalProperties": {"type": "object"}}


def _rule_option_schemas() -> dict[str, Any]:
    """`options.<rule code or name>`: each rule's own options, typed as the rule declares them."""
    from torchlint import catalog

    out: dict[str, Any] = {}
    for rule in catalog.static_rules():
        if not rule.options:
            continue
        props = {key: opt.json_schema() for key, opt in sorted(rule.options.items())}
        table = {"type": "object", "additionalProperties": False, "properties": props}
        out[rule.code] = out[rule.name] = table
    return out


def json_schema() -> dict[str, Any]:
    """A JSON schema for the `[tool.torchlint]` table (or a torchlint.toml), for editors."""
    properties = {}
    for option in OPTIONS:
        prop = {"description": option.help, **_schema_type(option)}
        if option.default is not None and option.kind not in ("table", "size"):
            prop["default"] = option.default
        properties[option.key] = prop
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "torchlint settings",
            "description": "[tool.torchlint] in pyproject.toml, or the top level of torchlint.toml",
            "type": "object", "additionalProperties": False, "properties": properties}
