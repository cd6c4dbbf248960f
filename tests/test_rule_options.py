"""Per-rule options are typed (torchlint/rules/rule_options.py): a config value of the wrong
type, outside its range or not one of its choices exits 2 naming the key and what a valid
value is; the JSON schema accepts exactly the values torchlint accepts; the docs list them."""

from __future__ import annotations

import math

import jsonschema
import pytest

from test_cli import write
from torchlint import catalog
from torchlint.options import json_schema
from torchlint.rules.rule_options import Option

FLAG = Option(bool, True, "a switch")
COUNT = Option(int, 3, "how many", minimum=1, maximum=10)
RATIO = Option(float, 0.5, "a share", minimum=0)
MODE = Option(str, "fast", "how", choices=("fast", "thorough"))
NAMES = Option(list, [], "names", item_type=str)
LEVELS = Option(list, ["low"], "levels", item_type=str, choices=("low", "high"))
SIZES = Option(list, [], "sizes", item_type=int, minimum=0)
VERSION = Option(str, "2.4", "a version", pattern=r"[0-9]+\.[0-9]+", pattern_help='"MAJOR.MINOR"')

CASES = [  # (option, a valid value, invalid values)
    (FLAG, False, [1, 0, "true", "no", None, []]),
    (COUNT, 10, [True, 0, 11, 2.5, "3", float("nan")]),
    (RATIO, 2, [-0.1, float("inf"), True, "0.5"]),
    (MODE, "thorough", ["slow", "", 1, ["fast"]]),
    (NAMES, ["a.B", "c"], ["a", ["a", 1], [True], {"a": 1}]),
    (LEVELS, ["high", "low"], [["medium"], "low", [1]]),
    (SIZES, [0, 5], [[-1], [1.5], [True], ["1"]]),
    (VERSION, "2.10", ["2", "2.x", "v2.4", " 2.4", "2.4\n", 2.4]),
]


@pytest.mark.parametrize("option, good, bad", CASES, ids=lambda v: getattr(v, "help", None) or "")
def test_a_value_is_checked_by_its_type_and_the_schema_agrees(option, good, bad):
    assert option.problem(good) is None
    assert option.problem(option.default) is None
    schema = option.json_schema()
    jsonschema.validate(good, schema)
    for value in bad:
        problem = option.problem(value)
        assert problem is not None and problem.startswith(f"must be {option.expected()}, got "), (value, problem)
        # JSON has no nan or inf; Python's `$` (jsonschema's regex engine) also matches before
        # a final newline, where the JSON schema's (ECMA) `$` and torchlint's fullmatch do not.
        if not (isinstance(value, float) and not math.isfinite(value)) and value != "2.4\n":
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(value, schema)


def test_the_expected_value_is_said_in_words():
    assert FLAG.expected() == "true or false"
    assert COUNT.expected() == "an integer from 1 to 10"
    assert MODE.expected() == 'a string one of "fast", "thorough"'
    assert LEVELS.expected() == 'a list of strings, each one of "low", "high"'
    assert SIZES.expected() == "a list of integers, each at least 0"
    assert COUNT.problem(True) == "must be an integer from 1 to 10, got true"
    assert NAMES.problem(["a", 1]) == 'must be a list of strings, got ["a", 1]'


@pytest.mark.parametrize("declaration", [
    lambda: Option(dict, {}, "x"),  # no such option type
    lambda: Option(list, [], "x"),  # a list names its item type
    lambda: Option(str, "a", "x", item_type=str),
    lambda: Option(int, 1, "x", choices=("a",)),  # choices are strings
    lambda: Option(str, "slow", "x", choices=("fast",)),  # the default must be valid
    lambda: Option(int, 0, "x", minimum=1),
    lambda: Option(str, "a", "x", pattern="a"),  # a pattern is explained in the message
])
def test_an_impossible_declaration_fails_when_the_rule_is_defined(declaration):
    with pytest.raises(TypeError):
        declaration()


@pytest.mark.parametrize("text, message", [
    ('[options.TL102]\nskip-initializers = 1\n', "options.TL102.skip-initializers must be true or false, got 1"),
    ('[options.deprecated-torch-api]\ntorch-version = "2.x"\n',
     'options.deprecated-torch-api.torch-version must be a string "MAJOR.MINOR" such as "2.4", got "2.x"'),
    ('[options.TL701]\nmodule-bases = ["pkg.Base", 3]\n',
     'options.TL701.module-bases must be a list of strings, got ["pkg.Base", 3]'),
    ('[options.TL701]\nmodule-bases = "pkg.Base"\n', 'options.TL701.module-bases must be a list of strings, got "pkg.Base"'),
])
def test_a_bad_rule_option_exits_2_naming_the_key_and_what_to_change(tmp_path, run_cli, text, message):
    write(tmp_path, "a.py", "import torch\nx = torch.cuda.amp.autocast()\n")
    write(tmp_path, "torchlint.toml", text)
    code, out, err = run_cli("check", "a.py")
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert err == f"error: {tmp_path / 'torchlint.toml'}: {message}\n"


def test_a_valid_rule_option_reaches_the_rule(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch\nx = torch.cuda.amp.autocast()\n")
    assert "TL906" in run_cli("check", "a.py")[1]
    write(tmp_path, "torchlint.toml", '[options.TL906]\ntorch-version = "2.3"\n')
    assert run_cli("check", "a.py")[0] == 0  # the namespace moved in 2.4: not deprecated for 2.3


def test_every_rule_option_is_in_the_shipped_schema_with_its_type():
    options = json_schema()["properties"]["options"]["properties"]
    declared = [(rule, key, opt) for rule in catalog.static_rules() for key, opt in rule.options.items()]
    assert declared
    for rule, key, opt in declared:
        for name in (rule.code, rule.name):
            assert options[name]["properties"][key] == opt.json_schema()
    version = options["TL901"]["properties"]["torch-version"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate("2.x", version)
