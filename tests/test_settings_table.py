"""The option table (torchlint/options.py) is the one list of settings: what it generates is
up to date, the shipped schema accepts real configs and rejects bad ones, every row is
checked as its type says, and the security limits can only be lowered by a config file."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from torchlint.config import CliOverrides, ConfigError, Settings, settings_from_table
from torchlint.options import DERIVED_FIELDS, KNOWN_KEYS, OPTIONS, OPTIONS_BY_KEY, json_schema, toml_example

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "torchlint" / "data" / "schema.json"


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
    """Settings' fields are generated (torchlint/settings_fields.py): one per row that fills a
    field by itself, plus the derived ones, whose sources are rows too."""
    fields = [f.name for f in dataclasses.fields(Settings)]
    assert fields == [attr for attr, *_ in DERIVED_FIELDS] + [o.attr for o in OPTIONS if o.field]
    for _, _, _, source in DERIVED_FIELDS[2:]:  # root and config_path come from where the config is
        assert set(source.split(", ")) <= KNOWN_KEYS, source
    # Every row lands somewhere: in its own field, a derived one, or a rule's options.
    sources = {key for *_, source in DERIVED_FIELDS for key in source.split(", ")}
    assert all(o.field or o.key in sources for o in OPTIONS)


# A config value for each row that fills a field, the field it gives, and a flag's value that beats it.
ROW_VALUES = {
    "exclude": (["gen"], ("gen",), ["other"], ("other",)),
    "extend-exclude": (["gen"], ("gen",), ["other"], ("gen", "other")),  # adds up
    "respect-gitignore": (False, False, True, True),
    "max-file-size": ("1KB", 1000, "2KiB", 2048),
    "lint-timeout": (5, 5.0, 7.5, 7.5),
    "cache-dir": ("c", "ROOT/c", None, None),  # config only: relative to the config's directory
    "verify-memory": (512, 512, 1024, 1024),
    "verify-budget": (10, 10.0, 20.0, 20.0),
    "verify-timeout": (10, 10.0, 20.0, 20.0),
    "fix": (True, True, False, False),
    "unsafe-fixes": (True, True, False, False),
}


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.field], ids=lambda o: o.key)
def test_a_row_fills_its_field_and_its_flag_beats_the_config(option, tmp_path: Path) -> None:
    config, field_value, flag, flag_field = ROW_VALUES[option.key]

    def resolved(value: object) -> object:
        return os.path.join(tmp_path, "c") if value == "ROOT/c" else value  # paths are strings

    default = settings_from_table(None, {}, CliOverrides(), tmp_path)
    assert getattr(default, option.attr) == getattr(Settings(tmp_path), option.attr)
    settings = settings_from_table(None, {option.key: config}, CliOverrides(), tmp_path)
    assert getattr(settings, option.attr) == resolved(field_value) != getattr(default, option.attr)
    assert option.flag == (flag is not None)
    if option.flag:
        cli = CliOverrides(**{option.attr: flag})
        assert cli.given() == {option.key}
        assert getattr(settings_from_table(None, {option.key: config}, cli, tmp_path), option.attr) == flag_field


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
