"""The option table (torchlint/options.py) is the one list of settings: what it generates is
up to date, the shipped schema accepts real configs and rejects bad ones, every row is
checked as its type says, and the security limits can only be lowered by a config file."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from torchlint.config import CliOverrides, ConfigError, Settings, settings_from_table
from torchlint.options import KNOWN_KEYS, OPTIONS, OPTIONS_BY_KEY, json_schema, toml_example

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "torchlint" / "data" / "schema.json"
# Settings fields that no single row fills: where they come from.
DERIVED = {"root": "the config file's directory", "config_path": "the config file",
           "enabled": "select, extend-select, ignore", "options": "options, torch-version, module-bases",
           "fixable": "fixable, extend-fixable, unfixable"}


def test_generated_files_are_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate_settings.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == json_schema()
    assert "```toml\n" + toml_example() + "```\n" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_schema_accepts_the_repos_own_config_and_the_readme_example() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    own = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["torchlint"]
    jsonschema.validate(own, schema)
    example = tomllib.loads(toml_example())["tool"]["torchlint"]
    jsonschema.validate(example, schema)
    jsonschema.validate({"options": {"data-attribute-mutation": {"skip-initializers": False}}}, schema)
    settings_from_table(None, example, CliOverrides(), ROOT)  # and torchlint itself accepts it


@pytest.mark.parametrize("table", [
    {"selekt": ["TL101"]}, {"select": "TL101"}, {"respect-gitignore": "yes"}, {"verify-memory": 4096},
    {"verify-timeout": 0.5}, {"lint-timeout": 1e12}, {"max-file-size": 10**9}, {"torch-version": 2.4},
    {"cache-dir": ""}, {"per-file-ignores": {"a": "TL1"}}, {"verify-unsandboxed": True},
    {"options": {"data-attribute-mutation": {"skip-initializers": "no"}}}, {"options": {"TL102": {"nope": 1}}},
])
def test_the_schema_and_torchlint_reject_the_same_bad_values(table: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(table, json_schema())
    with pytest.raises(ConfigError):
        settings_from_table(None, table, CliOverrides(), ROOT)


def test_every_settings_field_comes_from_the_table() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)}
    from_rows = {o.attr for o in OPTIONS} & fields
    assert fields == from_rows | set(DERIVED), fields - from_rows - set(DERIVED)


def test_every_flag_in_the_table_is_an_option_of_check() -> None:
    from torchlint.cli import check

    flags = {opt for param in check.params for opt in param.opts}
    for option in OPTIONS:
        if option.key != "cache-dir":  # --cache-dir picks the cache, which is no per-file setting (cli.py)
            assert (f"--{option.key}" in flags) == option.flag, option.key
    helps = {opt: param.help for param in check.params for opt in param.opts}
    assert all(helps[f"--{o.key}"] == o.flag_help and o.flag_help for o in OPTIONS if o.flag)
    # Command-line-only settings are not config keys: a config can never set them.
    assert "--verify-unsandboxed" in flags and "verify-unsandboxed" not in KNOWN_KEYS


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.ceiling is not None], ids=lambda o: o.key)
def test_a_config_can_lower_a_security_limit_but_not_raise_it(option, tmp_path: Path) -> None:
    above = option.ceiling + 1 if option.kind != "seconds" else option.ceiling * 2
    value = int(above) if option.kind in ("int", "size") else above
    with pytest.raises(ConfigError, match=f"can only lower.*Pass --{option.key} on the command line"):
        settings_from_table(tmp_path / "torchlint.toml", {option.key: value}, CliOverrides(), tmp_path)
    lower = int(option.ceiling // 2) if option.kind in ("int", "size") else option.ceiling / 2
    settings = settings_from_table(None, {option.key: lower}, CliOverrides(), tmp_path)
    assert getattr(settings, option.attr) == lower
    # The flag raises it, and the config's value is then not read.
    flag_value = str(int(above)) if option.kind == "size" else value
    settings = settings_from_table(None, {option.key: value}, CliOverrides(**{option.attr: flag_value}), tmp_path)
    assert getattr(settings, option.attr) == value


def test_cli_overrides_take_only_flagged_settings() -> None:
    assert CliOverrides(lint_timeout=5.0).given() == {"lint-timeout"}
    with pytest.raises(TypeError):
        CliOverrides(cache_dir="x")  # config-only (the --cache-dir flag is the cache's, not a setting)
    assert OPTIONS_BY_KEY["select"].flag and not OPTIONS_BY_KEY["fixable"].flag
