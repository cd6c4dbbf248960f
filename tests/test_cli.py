"""The `torchlint check` command as a user drives it: exit codes, selection, discovery,
stdin, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

BAD = textwrap.dedent("""\
    import torch

    with torch.no_grad():
        loss = model(x).sum()
        loss.backward()
    def forward(p: torch.Tensor):
        p.data -= 0.1 * p.grad
""")
CLEAN = "import torch\n\nx = torch.zeros(3)\n"


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_exit_codes(tmp_path, run_cli):
    write(tmp_path, "clean.py", CLEAN)
    assert run_cli("check", "clean.py")[0] == 0
    write(tmp_path, "bad.py", BAD)
    code, out, _ = run_cli("check", "bad.py", "--extend-select", "TL102")  # TL102 is off by default
    assert code == 1
    assert "bad.py:5:5: TL101" in out and "bad.py:7:5: TL102" in out
    assert out.rstrip().endswith("Found 2 findings.")
    assert run_cli("check", "bad.py", "--exit-zero")[0] == 0


def test_clean_summary(tmp_path, run_cli):
    write(tmp_path, "clean.py", CLEAN)
    assert run_cli("check", ".")[1].strip() == "All checks passed!"
    assert run_cli("check", ".", "-q")[1] == ""


def test_full_format_has_code_frame_and_help(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)
    out = run_cli("check", "bad.py", "--select", "TL101")[1]
    assert "5 |     loss.backward()\n  |     ^^^^^^^^^^^^^^^" in out
    assert "\n  help: Compute the loss outside the grad-disabled block" in out
    assert "note: `torchlint rule TL101` explains why" in out


def test_json_carries_the_help_line(tmp_path, run_cli):
    import json

    write(tmp_path, "bad.py", BAD)
    rows = json.loads(run_cli("check", "bad.py", "--select", "TL101", "--output-format", "json")[1])
    assert rows[0]["help"].startswith("Compute the loss outside") and len(rows[0]["message"]) <= 90


def test_unknown_selector_exits_2_naming_it(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)
    code, out, err = run_cli("check", "bad.py", "--select", "TL101,TL999")
    assert code == 2
    assert "TL999" in err and "Traceback" not in err
    code, _, err = run_cli("check", "bad.py", "--ignore", "E501", "--exit-zero")
    assert code == 2 and "E501" in err  # --exit-zero never hides errors


def test_prefix_selection_most_specific_wins(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)

    def codes(*args):
        out = run_cli("check", "bad.py", "--output-format", "json", *args)[1]
        return sorted({f["code"] for f in json.loads(out)})

    assert codes() == ["TL101"]  # TL102 is off by default
    assert codes("--extend-select", "TL102") == ["TL101", "TL102"]
    assert codes("--select", "TL1", "--ignore", "TL101") == ["TL102"]
    assert codes("--select", "TL101", "--ignore", "TL1") == ["TL101"]  # more specific wins
    assert codes("--select", "ALL", "--ignore", "TL102") == ["TL101"]
    assert codes("--select", "TL2") == []
    assert codes("--select", "TL2", "--extend-select", "TL102") == ["TL102"]
    assert codes("--extend-select", "tl102", "--ignore", "tl101") == ["TL102"]  # case-insensitive


def test_syntax_error_non_utf8_and_valid_file(tmp_path, run_cli):
    write(tmp_path, "proj/broken.py", "import torch\n\ndef f(:\n    pass\n")
    write(tmp_path, "proj/latin1.py", b"import torch\nname = '\xe9t\xe9'\n")
    write(tmp_path, "proj/good.py", BAD)
    code, out, err = run_cli("check", "proj", "--output-format", "concise")
    assert code == 1
    assert "Traceback" not in out + err
    lines = out.splitlines()
    tl000 = [line for line in lines if " TL000 " in line]
    assert len(tl000) == 2
    assert any(line.startswith("proj/broken.py:3:7: TL000 SyntaxError") for line in tl000), tl000
    assert any(line.startswith("proj/latin1.py:2:9: TL000 cannot decode file") for line in tl000), tl000
    assert any(line.startswith("proj/good.py:5:5: TL101") for line in lines)


def test_coding_cookie_is_honoured(tmp_path, run_cli):
    write(tmp_path, "latin.py", b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\n" + BAD.encode()[12:])
    code, out, _ = run_cli("check", "latin.py", "--output-format", "concise")
    assert "TL000" not in out and "TL101" in out


def test_newer_syntax_is_explained(tmp_path, run_cli):
    if sys.version_info >= (3, 12):
        return  # `type X = int` parses here
    write(tmp_path, "new.py", "import torch\ntype Alias = torch.Tensor\n")
    out = run_cli("check", "new.py")[1]
    assert "needs Python 3.12+" in out


def test_unreadable_and_missing_paths(tmp_path, run_cli):
    write(tmp_path, "good.py", BAD)
    code, out, err = run_cli("check", "good.py", "nope.py")
    assert code == 2
    assert "nope.py: no such file or directory" in err
    assert "TL101" in out  # the run went on


def test_columns_are_code_points(tmp_path, run_cli):
    write(tmp_path, "u.py", "import torch\nwith torch.no_grad():\n    l = m(x)\n    é = 1; l.backward()\n")
    out = json.loads(run_cli("check", "u.py", "--output-format", "json")[1])
    assert out[0]["location"] == {"row": 4, "column": 12}
    assert out[0]["end_location"] == {"row": 4, "column": 24}


def test_stdin(tmp_path, run_cli):
    code, out, _ = run_cli("check", "-", "--stdin-filename", "pkg/train.py", "--output-format", "concise",
                           input=BAD)
    assert code == 1
    assert out.startswith("pkg/train.py:5:5: TL101")
    code, out, _ = run_cli("check", "-", input=BAD, )
    assert code == 1 and out.startswith("-:5:5: TL101")
    code, out, _ = run_cli("check", "--stdin-filename", "x.py", "--output-format", "concise", input=BAD)
    assert code == 1 and out.startswith("x.py:5:5: TL101")  # no path: stdin, like ruff


def test_show_files_and_default_excludes(tmp_path, run_cli):
    write(tmp_path, "a.py", CLEAN)
    write(tmp_path, "stubs/b.pyi", CLEAN)
    write(tmp_path, "notes.txt", "torch")
    for skipped in (".venv/lib/x.py", "build/x.py", "node_modules/x.py", "__pycache__/x.py", ".git/x.py"):
        write(tmp_path, skipped, BAD)
    out = run_cli("check", "--show-files")[1]
    assert out.split() == ["a.py", "stubs/b.pyi"]


def test_exclude_options_and_force_exclude(tmp_path, run_cli):
    write(tmp_path, "gen/x.py", BAD)
    write(tmp_path, "src/y.py", BAD)
    out = run_cli("check", "--show-files", "--extend-exclude", "gen")[1]
    assert out.split() == ["src/y.py"]
    # Explicit files are linted unless --force-exclude (what pre-commit passes).
    assert run_cli("check", "gen/x.py", "--extend-exclude", "gen")[0] == 1
    assert run_cli("check", "gen/x.py", "--extend-exclude", "gen", "--force-exclude")[0] == 0


def test_respects_gitignore(tmp_path, run_cli):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, ".gitignore", "ignored/\nscratch_*.py\n")
    write(tmp_path, "ignored/x.py", BAD)
    write(tmp_path, "scratch_1.py", BAD)
    write(tmp_path, "kept.py", BAD)
    assert run_cli("check", "--show-files")[1].split() == ["kept.py"]
    out = run_cli("check", "--show-files", "--no-respect-gitignore")[1].split()
    assert out == ["ignored/x.py", "kept.py", "scratch_1.py"]


def test_output_file(tmp_path, run_cli):
    write(tmp_path, "bad.py", BAD)
    code, out, _ = run_cli("check", "bad.py", "--extend-select", "TL102", "--output-format", "json", "-o", "report.json")
    assert code == 1 and out == ""
    assert len(json.loads((tmp_path / "report.json").read_text())) == 2


def test_statistics(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    write(tmp_path, "b.py", BAD.split("def forward")[0])
    out = run_cli("check", ".", "--extend-select", "TL102", "--statistics")[1]
    assert out.splitlines() == ["    2\tTL101\tbackward-under-no-grad", "    1\tTL102\tdata-attribute-mutation"]


def test_python_dash_m_and_version():
    proc = subprocess.run([sys.executable, "-m", "torchlint", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("torchlint ")


def test_bad_option_value_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("check", "--output-format", "xml")
    assert code == 2 and "xml" in err


def test_explicitly_passed_ignored_directory_is_linted(tmp_path, run_cli):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, ".gitignore", "vendor/\n")
    write(tmp_path, "vendor/lib/x.py", BAD)
    assert run_cli("check", "--show-files")[1].split() == []
    assert run_cli("check", "vendor", "--show-files")[1].split() == ["vendor/lib/x.py"]


def test_ignoring_tl000_warns_on_stderr_for_torch_files(tmp_path, run_cli):
    write(tmp_path, "broken.py", "import torch\ndef f(:\n")
    write(tmp_path, "plain.py", "def g(:\n")  # no torch: not parsed when TL000 is off
    code, out, err = run_cli("check", ".", "--ignore", "TL000")
    assert code == 0 and out.strip() == "All checks passed!"
    assert "warning: broken.py:2:7: SyntaxError" in err and "plain.py" not in err
