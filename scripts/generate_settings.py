"""Regenerate what the option table (torchlint/options.py) generates: the `Settings` fields,
`CliOverrides` and how each row's value is merged with its flag (torchlint/settings_fields.py),
the JSON schema shipped for editors (torchlint/data/schema.json) and the README's
configuration example. `python scripts/generate_settings.py` writes them; `--check` exits 1
when one is stale. scripts/generate_all.py writes them too, with the catalog's files."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchlint.options import DERIVED_FIELDS, OPTIONS, Option, json_schema, toml_example  # noqa: E402

SCHEMA = ROOT / "torchlint" / "data" / "schema.json"
SETTINGS_MODULE = ROOT / "torchlint" / "settings_fields.py"
README = ROOT / "README.md"
MARKER = "<!-- generated from torchlint/options.py by scripts/generate_settings.py: edit the table, not this -->\n"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def readme_text(readme: str) -> str:
    start = readme.index(MARKER) + len(MARKER)
    end = readme.index("```\n", readme.index("```toml\n", start) + 1) + 4
    return readme[:start] + "```toml\n" + toml_example() + "```\n" + readme[end:]


# -- torchlint/settings_fields.py --------------------------------------------------------

_FLAG_TYPES = {"list": "list[str]", "bool": "bool", "size": "str", "int": "int", "seconds": "float", "version": "str"}


def _field_rows() -> list[Option]:
    return [option for option in OPTIONS if option.field]


def _flag_rows() -> list[Option]:
    return [option for option in OPTIONS if option.flag]


def _settings_class() -> list[str]:
    lines = ["@dataclass", "class SettingsFields:",
             '    """The fields of `Settings` (torchlint/config.py adds its methods). A field a row fills',
             "    holds that row's checked config value under its flag; the others are computed in",
             '    config.py from the rows named beside them."""', ""]
    for attr, kind, default, source in DERIVED_FIELDS:
        lines.append(f"    {attr}: {kind}{f' = {default}' if default else ''}  # {source}")
    lines += [f"    {o.attr}: {o.field} = {o.field_default}  # {o.key}" for o in _field_rows()]
    return lines


def _cli_class() -> list[str]:
    flags = _flag_rows()
    lines = ["class CliOverrides:",
             '    """The values the command line gives for settings, one per row with a flag',
             '    (`max_file_size="10MB"`); unset ones are None, lists that add up (extend-*, ignore) empty."""',
             "", "    def __init__(", "        self, *,",
             *(f"        {o.attr}: Optional[{_FLAG_TYPES[o.kind]}] = None," for o in flags), "    ) -> None:"]
    for o in flags:
        if o.adds_up:
            lines.append(f"        self.{o.attr}: list[str] = {o.attr} if {o.attr} is not None else []")
        else:
            lines.append(f"        self.{o.attr} = {o.attr}")
    pairs = "".join(f"\n            ({o.key!r}, self.{o.attr})," for o in flags).replace("'", '"')
    lines += ["", "    def given(self) -> frozenset[str]:", '        """Config keys whose value the command line gives."""',
              f"        values = ({pairs}\n        )",
              "        return frozenset(key for key, value in values if value not in (None, []))"]
    return lines


def _merge(o: Option) -> str:
    """How a row's field is made from the config's checked `values` and the flag `cli`."""
    key, config = f'"{o.key}"', f'values.get("{o.key}", {o.field_default})'
    if o.kind == "path":
        return f"os.path.join(root, values[{key}]) if {key} in values else None"
    if o.kind == "list":
        if o.adds_up:
            return f'tuple(values.get("{o.key}", ())) + tuple(cli.{o.attr})' if o.flag else f"tuple({config})"
        config = f"tuple({config})" if not o.flag else config
    if not o.flag:
        return config
    flag = f"flag_size(where, cli.{o.attr})" if o.kind == "size" else f"cli.{o.attr}"
    merged = f"{flag} if cli.{o.attr} is not None else {config}"
    return f"tuple({merged})" if o.kind == "list" else merged


def _row_fields() -> list[str]:
    lines = ["def row_fields(where: str, values: dict[str, Any], cli: CliOverrides, root: str) -> dict[str, Any]:",
             '    """The fields that one row each fills: the flag\'s value, else the config\'s (checked by',
             '    options.check_table), else the default; lists that add up join both; paths are relative to `root`."""',
             "    return {"]
    lines += [f'        "{o.attr}": {_merge(o)},' for o in _field_rows()]
    return lines + ["    }"]


def settings_module() -> str:
    names = sorted({n for o in _field_rows() for n in re.findall(r"\b[A-Z][A-Z0-9_]+\b", o.field_default)})
    head = ['"""Generated from the option table (torchlint/options.py) by scripts/generate_settings.py:',
            "edit the table, not this file. `Settings`' fields (config.py adds the methods), the command",
            'line\'s overrides, and how each row\'s config value and flag make its field."""', "",
            "from __future__ import annotations", "",
            "import os", "",
            "from torchlint.fast_dataclass import dataclass, field",
            f"from torchlint.options import {', '.join([*names, 'flag_size'])}", "",
            "TYPE_CHECKING = False  # typing only for mypy: importing it costs a one-file run ~3 ms",
            "if TYPE_CHECKING:", "    from typing import Any, Optional"]
    return "\n".join([*head, "", "", *_settings_class(), "", "", *_cli_class(), "", "", *_row_fields()]) + "\n"


def outputs(readme: str) -> dict[Path, str]:
    """Each generated file and its text; `readme` is the README as it is now."""
    return {SCHEMA: schema_text(), README: readme_text(readme), SETTINGS_MODULE: settings_module()}


def main(argv: list[str]) -> int:
    files = outputs(README.read_text(encoding="utf-8"))
    stale = [path for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python scripts/generate_settings.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
