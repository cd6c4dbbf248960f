"""Jupyter notebooks: discovered like .py files, code cells linted as one program, IPython
syntax skipped without shifting positions, findings by cell and line in every format,
noqa in cells, the cache, and no .ipynb ever reported clean without being read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from conftest import EXPECT_RE
from test_cli import write
from torchlint import notebook as nb
from torchlint.linter import FileTask, lint_task
from torchlint import catalog

NOTEBOOKS = Path(__file__).parent / "fixtures" / "notebooks"
DEFAULT_CODES = frozenset(r.code for r in catalog.static_rules() if r.default_enabled)
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
# Where each fixture's TL000 is (a syntax error has no `# expect:` marker of its own).
EXPECTED_ERRORS = {"syntax_error.ipynb": {(2, 1, "TL000")}}


def expected(path: Path) -> set[tuple[int, int, str]]:
    """(cell, row in cell, code) from `# expect: TLxxx` comments in the code cells."""
    out = set(EXPECTED_ERRORS.get(path.name, ()))
    for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        for row, line in enumerate("".join(cell["source"]).splitlines(), 1):
            m = EXPECT_RE.search(line)
            if m:
                out.update((number, row, code) for code in re.findall(r"TL\d{3}", m.group(1)))
    return out


def lint(path: Path, codes: frozenset[str] = DEFAULT_CODES):
    result = lint_task(FileTask(path=str(path), display=str(path), codes=codes))
    assert result.internal_error is None, result.internal_error
    return result


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_fixture_findings_have_the_right_cell_and_line(path):
    wanted = expected(path)  # the default rules, plus any off-by-default rule a marker names
    found = {(f.cell, f.row, f.code) for f in lint(path, DEFAULT_CODES | {c for _, _, c in wanted}).findings}
    assert found == wanted


def test_fixture_set_covers_what_it_should():
    names = {p.name for p in NOTEBOOKS.glob("*.ipynb")}
    assert names == {"positive.ipynb", "near_miss.ipynb", "magics.ipynb", "empty_cells.ipynb", "syntax_error.ipynb"}
    assert expected(NOTEBOOKS / "positive.ipynb") and not expected(NOTEBOOKS / "near_miss.ipynb")


def test_cells_are_one_program():
    # `torch` is imported in cell 2 and used in cell 4 of positive.ipynb; linted alone, the
    # using cell would not know `torch` (no finding); linted in order, it does.
    found = {(f.cell, f.code) for f in lint(NOTEBOOKS / "positive.ipynb").findings}
    assert (4, "TL101") in found


def test_syntax_error_in_one_cell_does_not_hide_the_others():
    result = lint(NOTEBOOKS / "syntax_error.ipynb")
    error = result.parse_error
    assert error is not None and (error.cell, error.row) == (2, 1) and "SyntaxError" in error.message
    assert any(f.code == "TL101" and f.cell == 3 for f in result.findings)


@pytest.mark.parametrize(("cell", "python"), [
    ("%matplotlib inline\nx = 1", ["", "x = 1"]),
    ("!pip install torch\nfiles = !ls\nout = %time f()", ["", "", ""]),
    ("?torch.nn\ntorch.nn.Linear?\ntorch.nn.Linear??", ["", "", ""]),
    ("%pip install \\\n    numpy\nx = 1", ["", "", "x = 1"]),
    ("for i in range(2):\n    !echo hi", ["for i in range(2):", "    pass"]),
    ("x = (a\n     % b)\ny = a != b", ["x = (a", "     % b)", "y = a != b"]),
    ('s = """\n!text\n%text\n"""', ['s = """', "!text", "%text", '"""']),
    ("x = 1 + \\\n    %y", ["x = 1 + \\", "    %y"]),
    ("%%bash\necho hi\nls", ["", "", ""]),
    ("%%time\nx = f()\n%time y = 2", ["", "x = f()", ""]),
    ("%%writefile a.py\nimport torch", ["", ""]),
])
def test_ipython_syntax_is_blanked_line_for_line(cell, python):
    lines = cell.split("\n")
    assert nb.python_lines(lines) == python


def test_directory_scan_finds_notebooks(tmp_path, run_cli):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "t.ipynb").write_bytes((NOTEBOOKS / "positive.ipynb").read_bytes())
    write(tmp_path, "a.py", "import torch\n")
    assert run_cli("check", "--show-files")[1].split() == ["a.py", "nb/t.ipynb"]


def test_text_json_sarif_and_github_positions(tmp_path, run_cli):
    (tmp_path / "nb.ipynb").write_bytes((NOTEBOOKS / "positive.ipynb").read_bytes())
    code, out, _ = run_cli("check", "nb.ipynb", "--output-format", "concise")
    assert code == 1
    assert out.splitlines()[0].startswith("nb.ipynb:cell 4:3:5: TL101 ")
    full = run_cli("check", "nb.ipynb")[1]
    assert "3 |     val_loss.backward()  # expect: TL101" in full  # the frame shows the cell's line
    findings = json.loads(run_cli("check", "nb.ipynb", "--output-format", "json")[1])
    first = findings[0]
    assert (first["cell"], first["location"], first["noqa_row"]) == (4, {"row": 3, "column": 5}, 3)
    doc = json.loads(run_cli("check", "nb.ipynb", "--output-format", "sarif")[1])
    jsonschema.validate(doc, SCHEMA)
    result = doc["runs"][0]["results"][0]
    assert (result["properties"]["cell"], result["properties"]["cellLine"]) == (4, 3)
    # The region is the line of the .ipynb file that GitHub shows: the flagged code's.
    file_lines = (tmp_path / "nb.ipynb").read_text().splitlines()
    region = result["locations"][0]["physicalLocation"]["region"]
    assert "val_loss.backward()" in file_lines[region["startLine"] - 1] and region["endLine"] == region["startLine"]
    assert "fixes" not in result  # a fix's edits would count the cell's rows
    github = run_cli("check", "nb.ipynb", "--output-format", "github")[1].splitlines()[0]
    assert github.startswith(f"::error file=nb.ipynb,line={region['startLine']},title=")
    assert "TL101 cell 4, line 3: " in github
    # A .py file still has no cell.
    write(tmp_path, "p.py", "import torch\nwith torch.no_grad():\n    l = m(x)\n    l.backward()\n")
    assert json.loads(run_cli("check", "p.py", "--output-format", "json")[1])[0]["cell"] is None


@pytest.mark.parametrize(("content", "message"), [
    ('{"cells": [', "notebook is not valid JSON"),
    ('{"a": 1}', "not a Jupyter notebook"),  # parses as a Python dict literal: must not pass as clean
    ("[1, 2]", "not a Jupyter notebook"),
    ('{"worksheets": [], "nbformat": 3}', "nbformat 3"),
    ('{"cells": [{"cell_type": "code", "source": 5}]}', "cell 1"),
    (b"\xff\xfe{", "notebook is not valid JSON"),
])
def test_an_unreadable_notebook_is_never_clean(tmp_path, run_cli, content, message):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_cli("check", "nb.ipynb", "--output-format", "concise")
    assert code == 1 and out.startswith("nb.ipynb:") and "TL000" in out and message in out
    assert "All checks passed!" not in out
    # With TL000 deselected the problem still reaches stderr, naming the file.
    code, out, err = run_cli("check", "nb.ipynb", "--select", "TL101")
    assert "nb.ipynb" in err and message in err


def test_noqa_in_cells(tmp_path, run_cli):
    doc = json.loads((NOTEBOOKS / "positive.ipynb").read_text())
    assert any("# noqa: TL102" in "".join(c["source"]) for c in doc["cells"])  # the fixture covers line noqa
    doc["cells"][1]["source"].append("\n# torchlint: noqa: TL101, TL102")  # file-wide, from a cell
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    codes = {f["code"] for f in json.loads(run_cli("check", "nb.ipynb", "--output-format", "json")[1])}
    assert codes == {"TL201"}


def test_noqa_on_a_broken_cell_line(tmp_path, run_cli):
    doc = json.loads((NOTEBOOKS / "syntax_error.ipynb").read_text())
    doc["cells"][1]["source"][0] = "def broken(:  # noqa: TL000\n"
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    findings = json.loads(run_cli("check", "nb.ipynb", "--output-format", "json")[1])
    assert [(f["cell"], f["code"]) for f in findings] == [(3, "TL101")]


def test_non_python_metadata_does_not_hide_python_cells(tmp_path, run_cli):
    """The metadata is the tree's (issue 16): a notebook labelled R is still linted."""
    doc = json.loads((NOTEBOOKS / "positive.ipynb").read_text())
    (tmp_path / "py.ipynb").write_text(json.dumps(doc))
    doc["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    (tmp_path / "r.ipynb").write_text(json.dumps(doc))
    code, out, _ = run_cli("check", "r.ipynb", "--output-format", "json")
    labelled_r = [(f["cell"], f["location"], f["code"]) for f in json.loads(out)]
    python = [(f["cell"], f["location"], f["code"]) for f in
              json.loads(run_cli("check", "py.ipynb", "--output-format", "json")[1])]
    assert code == 1 and labelled_r == python != []


def test_stdin_notebook(run_cli):
    code, out, _ = run_cli("check", "-", "--stdin-filename", "nb.ipynb", "--output-format", "concise",
                           input=(NOTEBOOKS / "positive.ipynb").read_bytes())
    assert code == 1 and out.startswith("nb.ipynb:cell 4:3:5: TL101")


def test_cache_covers_notebooks(tmp_path, run_cli, monkeypatch):
    (tmp_path / "nb.ipynb").write_bytes((NOTEBOOKS / "positive.ipynb").read_bytes())
    first = run_cli("check", "nb.ipynb", "--output-format", "json")[1]
    # A warm run serves the notebook from the cache: linting it again would fail here.
    def fail(*_args, **_kwargs):
        raise AssertionError("linted again")
    monkeypatch.setattr(nb, "lint_notebook", fail)
    assert run_cli("check", "nb.ipynb", "--output-format", "json")[1] == first
    monkeypatch.undo()
    doc = json.loads((tmp_path / "nb.ipynb").read_text())
    doc["cells"][4]["source"] = ["x = 1\n"]  # cell 5 no longer writes through .data
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    codes = {(f["cell"], f["code"]) for f in json.loads(run_cli("check", "nb.ipynb", "--output-format", "json")[1])}
    assert codes == {(4, "TL101"), (6, "TL201")}


def test_fix_hook_says_notebooks_are_not_fixed():
    assert "not applied to Jupyter notebooks" in nb.FIX_UNSUPPORTED


@pytest.mark.parametrize("layout", ["jupyter", "compact", "one-string", "split-strings"])
def test_cell_lines_map_to_the_ipynb_lines_that_hold_them(layout):
    from torchlint.notebook_positions import cell_file_lines

    source = {"jupyter": ["import torch\n", "x = 1\n", "y = torch.zeros(2)"],
              "compact": ["import torch\n", "x = 1\n", "y = torch.zeros(2)"],
              "one-string": "import torch\nx = 1\ny = torch.zeros(2)",
              # a line spread over two strings, as some tools write: it starts in the first
              "split-strings": ["import to", "rch\nx = 1\n", "y = torch.zeros(2)"]}[layout]
    starts = {"split-strings": ["import to", "x = 1", "torch.zeros"]}.get(layout, ["import torch", "x = 1", "torch.zeros"])
    # Key order and "source" keys elsewhere (metadata, outputs) must not confuse the walk.
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
             {"source": source, "cell_type": "code", "metadata": {"tags": ["source"], "source": "no"},
              "execution_count": 1,
              "outputs": [{"output_type": "stream", "name": "stdout", "text": ["source\n"], "source": ["no"]}]}]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=None if layout == "compact" else 1)
    lines = cell_file_lines(text)
    file_lines = text.splitlines()
    assert len(lines[2]) == 3 and len(lines[1]) == 1
    for row, start in enumerate(starts):
        assert start in file_lines[lines[2][row] - 1]
    assert "# title" in file_lines[lines[1][0] - 1]
    if layout == "jupyter":
        assert len(set(lines[2])) == 3  # one file line per source line


def test_cell_lines_of_text_that_is_not_json_are_unknown():
    from torchlint.notebook_positions import cell_file_lines

    assert cell_file_lines('{"cells": [') is None
    assert cell_file_lines("") is None


def test_sarif_fingerprints_follow_the_flagged_lines_text_not_its_position(tmp_path, run_cli):
    # Sources load lazily: SARIF once read an empty mapping as "no sources", so every
    # fingerprint hashed an empty line and shifted when a finding was added above it.
    def fingerprints() -> dict[str, str]:
        doc = json.loads(run_cli("check", "a.py", "--select", "TL909", "--output-format", "sarif", "--no-cache")[1])
        lines = (tmp_path / "a.py").read_text().splitlines()
        return {lines[r["locations"][0]["physicalLocation"]["region"]["startLine"] - 1].strip():
                r["partialFingerprints"]["torchlint/v1"] for r in doc["runs"][0]["results"]}

    head = "import torch.nn.functional as F\nloss = F.mse_loss(a, b)\n"
    write(tmp_path, "a.py", head + "v = loss.data[0]\n")
    before = fingerprints()
    write(tmp_path, "a.py", head + "w = loss.data[0]\nv = loss.data[0]\n")
    after = fingerprints()
    assert after["v = loss.data[0]"] == before["v = loss.data[0]"]
    assert after["w = loss.data[0]"] != after["v = loss.data[0]"]


def _fixable_notebook(indent, one_string=False) -> str:
    def source(lines):
        return "".join(lines) if one_string else lines
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
             {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["keep"]},
              "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
              "source": source(["%matplotlib inline\n", "import torch\n", "with torch.no_grad:\n", "    y = 1"])},
             {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
              "source": source(["with torch.enable_grad:\n", "    z = 'é'"])}]
    doc = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
           "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(("indent", "one_string"), [(1, False), (None, False), (2, True)],
                         ids=["jupyter", "compact", "one-string"])
def test_fix_rewrites_only_the_code_cells_of_a_notebook(tmp_path, run_cli, indent, one_string):
    original = _fixable_notebook(indent, one_string)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    code, out, _ = run_cli("check", "nb.ipynb", "--select", "TL108", "--diff", "--no-cache")
    assert code == 1 and (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == original  # --diff writes nothing
    assert "--- a/nb.ipynb:cell 2\n+++ b/nb.ipynb:cell 2\n" in out and "+with torch.no_grad():\n" in out
    assert "--- a/nb.ipynb:cell 3" in out and "+with torch.enable_grad():\n" in out

    code, out, _ = run_cli("check", "nb.ipynb", "--select", "TL108", "--fix", "--no-cache")
    assert code == 0, out
    fixed = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    expected = original.replace("with torch.no_grad:", "with torch.no_grad():").replace(
        "with torch.enable_grad:", "with torch.enable_grad():")
    assert fixed == expected  # outputs, metadata, key order, indentation and escapes as they were
    assert run_cli("check", "nb.ipynb", "--select", "TL108", "--no-cache")[0] == 0


def test_add_noqa_comments_the_cells_of_a_notebook(tmp_path, run_cli):
    original = _fixable_notebook(1)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    code, _, err = run_cli("check", "nb.ipynb", "--select", "TL108", "--add-noqa", "--no-cache")
    assert code == 0, err
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert cells[1]["source"][2] == "with torch.no_grad:  # noqa: TL108\n"
    assert cells[2]["source"][0] == "with torch.enable_grad:  # noqa: TL108\n"
    assert cells[1]["outputs"] == [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]
    assert run_cli("check", "nb.ipynb", "--select", "TL108", "--no-cache")[0] == 0


def test_a_notebook_fix_never_touches_a_line_ipython_syntax_was_blanked_on():
    # The fix of a finding is moved into its cell only where the program's line is the cell's.
    from torchlint.records import Edit, Fix

    rows = [(2, 1), (2, 2), (3, 1)]
    program = ["", "x = 1", "y = 2"]
    written = {2: ["%time x = 1", "x = 1"], 3: ["y = 2"]}
    fix = Fix("f", (Edit((2, 1), (2, 2), "z"),))
    assert nb._fix_in_cell(fix, 2, rows, program, written).edits == (Edit((2, 1), (2, 2), "z"),)
    assert nb._fix_in_cell(Fix("f", (Edit((1, 1), (1, 2), "z"),)), 2, rows, program, written) is None  # blanked
    assert nb._fix_in_cell(Fix("f", (Edit((2, 1), (3, 1), "z"),)), 2, rows, program, written) is None  # spans cells


def test_a_cells_last_expression_is_displayed_not_discarded(tmp_path):
    """TL202: IPython shows the value of a cell's last top-level expression."""
    cells = [["import torch\n", "x = torch.zeros(3)\n", "x.float()"],  # shown: silent
             ["x.double()\n", "y = x + 1"],  # not the last statement: discarded
             ["for _ in range(2):\n", "    x.half()"],  # inside a loop: never displayed
             ["x.int()  # the last cell's last expression: shown"]]
    doc = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "look.ipynb"
    path.write_text(json.dumps(doc))
    found = {(f.cell, f.row) for f in lint(path, frozenset({"TL202"})).findings}
    assert found == {(2, 1), (3, 2)}
    # The same code as a script: nothing is displayed, every conversion is discarded.
    script = tmp_path / "look.py"
    script.write_text("".join("".join(c) + "\n" for c in cells))
    assert len(lint(script, frozenset({"TL202"})).findings) == 4


def _notebook(tmp_path: Path, *cells: str) -> Path:
    doc = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                      "source": c.splitlines(keepends=True)} for c in cells],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("cell", "python"), [
    ("    import torch\n    x = 1\n\n    y = 2", ["import torch", "x = 1", "", "y = 2"]),
    ("\n\t\tif x:\n\t\t    y = 1", ["", "if x:", "    y = 1"]),  # the first non-blank line's indent
    ("  a = 1\nb = 2", ["a = 1", "b = 2"]),  # a line without it is left as it is (IPython too)
    ("torch.*Tensor?\n?torch.*Tensor\nnp.*load*??\nx = a * b", ["", "", "", "x = a * b"]),
])
def test_what_ipythons_input_transformers_accept_is_python(cell, python):
    assert nb.python_lines(cell.split("\n")) == python


def test_an_indented_cell_is_linted_at_its_own_columns_and_fixed_there(tmp_path, run_cli):
    """IPython strips a cell's common leading indent; torchlint parses it so, and reports
    and fixes at the columns of the cell as written."""
    path = _notebook(tmp_path, "    import torch\n    torch.*Tensor?",
                     "    with torch.no_grad:\n        y = 1")
    findings = lint(path, frozenset({"TL000", "TL108"})).findings
    assert [(f.code, f.cell, f.row, f.col) for f in findings] == [("TL108", 2, 1, 10)]
    assert findings[0].fix is not None and findings[0].fix.edits[0].start[1] > 4
    code, out, _ = run_cli("check", "nb.ipynb", "--select", "TL108", "--fix", "--no-cache")
    assert code == 0, out
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[1]["source"] == ["    with torch.no_grad():\n", "        y = 1"]


def test_a_writefile_cell_of_python_is_linted_as_the_file_it_writes(tmp_path, run_cli):
    """`%%writefile train.py` holds the project's code: linted as a module of its own (the
    kernel does not run it, so it is not part of the notebook's program), placed in its cell."""
    path = _notebook(tmp_path, "import torch",
                     "%%writefile train.py\nimport torch\nwith torch.no_grad:\n    y = 1",
                     "%%writefile -a train.py\nwith torch.enable_grad:  # noqa: TL108\n    pass",
                     "%%writefile notes.txt\nwith torch.no_grad:",
                     "%%writefile broken.py\ndef f(:")
    found = lint(path, frozenset({"TL000", "TL108"})).findings
    assert [(f.code, f.cell, f.row) for f in found] == [("TL108", 2, 3), ("TL000", 5, 2)]
    assert found[0].col == 6
    code, out, _ = run_cli("check", "nb.ipynb", "--select", "TL108", "--fix", "--no-cache")
    assert code == 0, out
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[1]["source"][2] == "with torch.no_grad():\n"
    assert cells[3]["source"] == ["%%writefile notes.txt\n", "with torch.no_grad:"]  # not Python: untouched


def test_a_notebooks_file_level_noqa_covers_its_writefile_cells(tmp_path):
    written = "%%writefile a.py\nimport torch\nwith torch.no_grad:\n    pass"
    assert len(lint(_notebook(tmp_path, "x = 1", written), frozenset({"TL108"})).findings) == 1
    assert lint(_notebook(tmp_path, "# torchlint: noqa: TL108", written), frozenset({"TL108"})).findings == []
