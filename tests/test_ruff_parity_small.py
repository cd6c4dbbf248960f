"""Small ruff-parity points: the fix hint's grammar, a file-level `# flake8: noqa`, and
TL702 (missing super().__init__()) not firing in `.pyi` stubs."""

from __future__ import annotations

import pytest

from test_cli import BAD, write

TWO_UNSAFE = "import torch\na = torch.load('a.pt')\nb = torch.load('b.pt')\n"  # TL601's fix is unsafe
MODULE_WITHOUT_SUPER = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self) -> None: ...\n"


@pytest.mark.parametrize("text, hint", [
    ("import torch\nstate = torch.load('m.pt')\n", "No fixes available (1 hidden fix can be enabled with"),
    (TWO_UNSAFE, "No fixes available (2 hidden fixes can be enabled with"),
])
def test_hidden_fix_count_is_grammatical(tmp_path, run_cli, text, hint):
    write(tmp_path, "a.py", text)
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL601", "a.py")
    assert rc == 1 and hint in out and "1 hidden fixes" not in out


@pytest.mark.parametrize("comment", ["# flake8: noqa", "# FLAKE8: NOQA", "#flake8:noqa"])
def test_file_level_flake8_noqa_exempts_the_file(tmp_path, run_cli, comment):
    write(tmp_path, "a.py", comment + "\n" + BAD)
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "a.py")
    assert rc == 0, out


def test_flake8_noqa_with_codes_exempts_only_those(tmp_path, run_cli):
    write(tmp_path, "a.py", "# flake8: noqa: TL101\n" + BAD)
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--extend-select", "TL102", "--output-format", "concise",
                         "a.py")
    assert rc == 1 and "TL101" not in out and "TL102" in out


def test_a_line_noqa_of_flake8_is_not_file_level(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD.replace("loss.backward()", "loss.backward()  # noqa: E501"))
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--output-format", "concise", "a.py")
    assert rc == 1 and "TL101" in out


def test_tl702_is_silent_in_stubs_and_still_fires_in_code(tmp_path, run_cli):
    write(tmp_path, "net.pyi", MODULE_WITHOUT_SUPER)
    write(tmp_path, "net.py", MODULE_WITHOUT_SUPER)
    rc, out, _ = run_cli("check", "--isolated", "--no-cache", "--output-format", "concise", "--select", "TL702", ".")
    assert "net.py:5:" in out and "net.pyi" not in out
