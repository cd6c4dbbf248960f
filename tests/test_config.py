"""Configuration files: discovery, precedence, validation (exit 2 with a clear message)."""

from __future__ import annotations

import json

from test_cli import BAD, write


def codes(run_cli, *args, cwd=None):
    code, out, err = run_cli("check", "--output-format", "json", *args, cwd=cwd)
    assert code in (0, 1), err
    return sorted({(f["filename"].rsplit("/", 1)[-1], f["code"]) for f in json.loads(out)})


def test_pyproject_table(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nextend-select = ["TL102"]\nignore = ["TL101"]\n')
    write(tmp_path, "a.py", BAD)
    assert codes(run_cli, ".") == [("a.py", "TL102")]


def test_pyproject_without_table_is_skipped(tmp_path, run_cli):
    write(tmp_path, "torchlint.toml", 'extend-select = ["TL102"]\nignore = ["TL101"]\n')
    write(tmp_path, "sub/pyproject.toml", '[project]\nname = "x"\n')
    write(tmp_path, "sub/a.py", BAD)
    assert codes(run_cli, "sub") == [("a.py", "TL102")]


def test_closest_config_wins_and_cli_beats_files(tmp_path, run_cli):
    write(tmp_path, "torchlint.toml", 'extend-select = ["TL102"]\nignore = ["TL101"]\n')
    write(tmp_path, "pkg/.torchlint.toml", 'select = ["TL101"]\n')
    write(tmp_path, "a.py", BAD)
    write(tmp_path, "pkg/b.py", BAD)
    assert codes(run_cli, ".") == [("a.py", "TL102"), ("b.py", "TL101")]
    assert codes(run_cli, ".", "--select", "TL102") == [("a.py", "TL102"), ("b.py", "TL102")]
    assert codes(run_cli, ".", "--extend-select", "TL102") == [
        ("a.py", "TL102"), ("b.py", "TL101"), ("b.py", "TL102")]
    assert codes(run_cli, ".", "--isolated") == [("a.py", "TL101"), ("b.py", "TL101")]  # TL102: off by default
    assert codes(run_cli, ".", "--isolated", "--extend-select", "TL102") == [
        ("a.py", "TL101"), ("a.py", "TL102"), ("b.py", "TL101"), ("b.py", "TL102")]
    assert codes(run_cli, ".", "--config", "pkg/.torchlint.toml") == [("a.py", "TL101"), ("b.py", "TL101")]


def test_per_file_ignores_and_excludes(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", textwrap_config("""
        [tool.torchlint]
        extend-select = ["TL102"]
        extend-exclude = ["generated"]
        [tool.torchlint.per-file-ignores]
        "tests/*" = ["TL1"]
        "legacy.py" = ["TL102"]
    """))
    write(tmp_path, "tests/t.py", BAD)
    write(tmp_path, "legacy.py", BAD)
    write(tmp_path, "generated/g.py", BAD)
    assert codes(run_cli, ".") == [("legacy.py", "TL101")]


def test_config_errors_exit_2(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    cases = {
        'select = ["TL101"\n': "invalid TOML",
        'selekt = ["TL101"]\n': "unknown key `selekt`",
        'select = "TL101"\n': "`select` must be a list of strings",
        'ignore = ["TL99"]\n': "TL99",
        'respect-gitignore = "yes"\n': "respect-gitignore",
        '[options.TL101]\nfoo = 1\n': "unknown option `foo`",
        '[options.TL999]\nfoo = 1\n': "unknown rule",
    }
    for text, needle in cases.items():
        write(tmp_path, "torchlint.toml", text)
        code, out, err = run_cli("check", "a.py")
        assert code == 2, (text, out, err)
        assert needle in err and "torchlint.toml" in err and "Traceback" not in err, (text, err)


def test_missing_config_flag_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("check", "--config", "nope.toml")
    assert code == 2 and "nope.toml" in err


def textwrap_config(text: str) -> str:
    import textwrap
    return textwrap.dedent(text).lstrip()


def test_per_rule_option_changes_behaviour(tmp_path, run_cli):
    src = ("import torch\n\n\ndef init_weights(m):\n    m.weight.data.normal_(0, 0.02)\n\n\n"
           "def forward(m):\n    m.weight.data.add_(1.0)\n\n\n"
           "def step(m, x):\n    loss = m(x).sum()\n    init_weights(m)\n    loss.backward()\n")
    write(tmp_path, "a.py", src)
    rows = lambda: [f["location"]["row"] for f in json.loads(run_cli("check", "a.py", "--extend-select", "TL102", "--output-format", "json")[1])]  # noqa: E731
    assert rows() == [9]
    write(tmp_path, "pyproject.toml", '[tool.torchlint.options.data-attribute-mutation]\nskip-initializers = false\n')
    assert rows() == [5, 9]
    write(tmp_path, "pyproject.toml", '[tool.torchlint.options.TL102]\nskip-initializers = "no"\n')
    code, _, err = run_cli("check", "a.py", "--extend-select", "TL102")
    assert code == 2 and 'options.TL102.skip-initializers must be true or false, got "no"' in err
