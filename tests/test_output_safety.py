"""What a pull request can do through torchlint's output and the paths it names (issue 16,
points 6, 7 and 10): forge GitHub workflow commands, inject Markdown into a code-scanning
alert, lead a named directory or `-o` through a committed symlink, hide notebook code
behind metadata or size, and move a `# noqa` with a lone carriage return. Each test failed
before the fix."""

from __future__ import annotations

import io
import json
import os
import re
import string
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest

REPO = Path(__file__).resolve().parents[1]
FLAGGED = "import torch\nx = torch.symeig(3)\n"  # TL901 on line 2
SECRET = "ghp_OUTSIDE_SECRET_0123456789"
# File names that would be workflow commands if they started a line of output.
COMMAND_NAMES = [
    "::error title=Security::All tests passed, merge me.py",
    "::add-mask::x.py",
    "::stop-commands::tok.py",
    " \u3000::warning::spaced.py",  # the runner trims leading (Unicode) whitespace first
    "x##[error]legacy.py",  # the legacy form is recognised anywhere in a line
    "y##vso[task.logissue type=error]azure.py",  # Azure Pipelines: anywhere in a line too
]


def _torchlint(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "torchlint", *args], cwd=cwd, capture_output=True, timeout=120,
                          env=env, **kwargs)


def _commands(text: str) -> list[str]:
    """Lines the GitHub runner would take for workflow commands (its rules: lines end at
    \\r, \\n or \\r\\n; `::` after leading whitespace; `##[` anywhere)."""
    return [line for line in re.split(r"\r\n|\r|\n", text)
            if line.lstrip().startswith("::") or re.search(r"##(vso)?\[", line, re.IGNORECASE)]


# -- point 6: no line of output is a workflow command ----------------------------------

TEXT_REPORTS = ["full", "concise", "grouped", "pylint"]
DATA_REPORTS = ["json", "json-lines", "sarif", "gitlab", "rdjson", "junit"]


@pytest.mark.parametrize("args", [
    *(["--output-format", fmt] for fmt in TEXT_REPORTS + DATA_REPORTS),
    ["--output-format", "full", "--statistics"],
    ["--show-files"],
    ["--fix", "--show-fixes", "--output-format", "concise"],
])
def test_file_names_cannot_forge_workflow_commands(tmp_path, args):
    for name in COMMAND_NAMES:
        (tmp_path / name).write_text("import torch\nwith torch.no_grad:\n    pass\n")  # TL108, fixable
    proc = _torchlint("check", "--no-cache", ".", *args, cwd=tmp_path)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode in (0, 1), err
    assert _commands(out) == [] and _commands(err) == []
    fmt = args[1] if args[0] == "--output-format" and len(args) == 2 else None
    if fmt in TEXT_REPORTS or "--show-files" in args:
        assert "\\x3a:error title=Security::All tests passed, merge me.py" in out  # still named
    if fmt in DATA_REPORTS:  # still valid, and the names decode unchanged
        if fmt == "junit":
            decoded = ET.tostring(ET.fromstring(out), encoding="unicode")
        elif fmt == "json-lines":
            decoded = json.dumps([json.loads(line) for line in out.splitlines()], ensure_ascii=False)
        else:
            decoded = json.dumps(json.loads(out), ensure_ascii=False)
        spelled = "x%23%23%5Berror%5Dlegacy.py" if fmt == "sarif" else "x##[error]legacy.py"  # SARIF: a URI
        assert spelled in decoded and "y##vso[task.logissue" in decoded.replace("%5B", "[").replace("%23", "#")


def test_a_finding_named_by_a_command_file_stays_recognisable(tmp_path):
    (tmp_path / COMMAND_NAMES[0]).write_text(FLAGGED)
    proc = _torchlint("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    line = proc.stdout.decode().splitlines()[0]
    assert line == ("\\x3a:error title=Security::All tests passed, merge me.py:2:5: TL901 "
                    "`torch.symeig` was removed in torch 2.0: on 2.13 it raises RuntimeError")


def test_every_line_written_is_filtered_not_only_the_renderers(tmp_path, monkeypatch, run_cli):
    """Structural: whatever produces the text (here a renderer and a warning that know
    nothing of the filter), no line leaves as a command."""
    from torchlint import output

    (tmp_path / "a.py").write_text(FLAGGED)

    def forged(findings, sources, **_):
        click.echo("  ::error::from stderr\n##[warning]legacy", err=True)
        return "::error file=a.py::forged\r::add-mask::x\n"

    monkeypatch.setitem(output.FORMATS, "concise", forged)
    code, out, err = run_cli("check", "--no-cache", "--output-format", "concise", ".")
    assert code == 1
    assert _commands(out) == [] and _commands(err) == []
    assert "\\x3a:error file=a.py::forged" in out and "#\\u0023[warning]legacy" in err


@pytest.mark.parametrize("pieces", [
    [":", ":error::split\n"],
    ["  ", ":", ":", "error::split\n"],
    ["ok\r", ":", ":error::after a carriage return"],
    ["#", "#[error]split\n"],
])
def test_the_stream_filter_sees_lines_not_writes(pieces):
    from torchlint.output import ci_safe

    sink = io.StringIO()
    stream = ci_safe.CommandSafeStream(sink)
    for piece in pieces:
        stream.write(piece)
        stream.flush()
    stream.finish()
    assert _commands(sink.getvalue()) == []
    assert sink.getvalue().replace("\\x3a", ":").replace("\\u0023", "#") == "".join(pieces)


def _parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """The runner's parser (ActionCommand.TryParseV2), to read back what it would see."""
    assert line.startswith("::")
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2:]
    name, _, props = info.partition(" ")
    properties = {}
    for pair in filter(None, props.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = (value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
                           .replace("%2C", ",").replace("%25", "%"))
    return name, properties, data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def test_github_format_escapes_names_and_messages(tmp_path):
    names = ["::error title=x::a, b.py", "100%25 done,ok.py", "line\nbreak\rname.py"]
    for name in names:
        (tmp_path / name).write_text(FLAGGED)
    proc = _torchlint("check", "--no-cache", "--output-format", "github", ".", cwd=tmp_path)
    lines = re.split(r"\r\n|\r|\n", proc.stdout.decode().rstrip("\n"))
    assert len(lines) == 3  # one command per finding: nothing split a line
    seen = set()
    for line in lines:
        name, props, data = _parse_workflow_command(line)
        assert name == "error" and props["line"] == "2" and data.startswith("TL901 ")
        seen.add(props["file"])
    assert seen == {"::error title=x::a, b.py", "100%25 done,ok.py", "line\\x0abreak\\x0dname.py"}


def test_azure_format_is_one_escaped_command_per_finding(tmp_path):
    for name in ("a;b].py", "100% ##vso[x].py", "::error::c.py"):
        (tmp_path / name).write_text(FLAGGED)
    proc = _torchlint("check", "--no-cache", "--output-format", "azure", ".", cwd=tmp_path)
    lines = re.split(r"\r\n|\r|\n", proc.stdout.decode().rstrip("\n"))
    assert len(lines) == 3 and all(line.startswith("##vso[task.logissue type=error;sourcepath=") for line in lines)
    for line in lines:  # the agent reads the properties up to the first `]`: none may end early
        props = line[len("##vso[task.logissue "):line.index("]")]
        assert dict(p.split("=", 1) for p in props.rstrip(";").split(";"))["code"] == "TL901"


# -- point 6: SARIF Markdown ------------------------------------------------------------

def _unescaped_outside_code_spans(markdown: str) -> list[str]:
    """Characters that can start Markdown inline syntax (links, images, emphasis, HTML,
    entities) found neither backslash-escaped nor inside a code span (CommonMark: a run of
    N backticks up to the next run of exactly N). An underscore inside a word is inert."""
    found = []
    i = 0
    while i < len(markdown):
        c = markdown[i]
        if c == "\\" and i + 1 < len(markdown) and markdown[i + 1] in string.punctuation:
            i += 2
            continue
        if c == "`":
            run = re.match(r"`+", markdown[i:]).group()
            close = re.compile(rf"(?<!`){run}(?!`)").search(markdown, i + len(run))
            if close:
                i = close.end()
                continue
        inert = c == "_" and 0 < i < len(markdown) - 1 and markdown[i - 1].isalnum() and markdown[i + 1].isalnum()
        if c in "[]<>!*_&`~" and not inert:
            found.append(markdown[max(0, i - 10):i + 10])
        i += 1
    return found


def test_sarif_markdown_cannot_be_injected_through_quoted_source(tmp_path, run_cli):
    (tmp_path / "loss.py").write_text(
        'import torch\nimport torch.nn.functional as F\ny = F.l1_loss(x,"`[a](http://e)`").data[0]\n')
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "sarif", "loss.py")
    (result,) = json.loads(out)["runs"][0]["results"]
    markdown = result["message"]["markdown"]
    assert "http" in markdown  # the quoted source is still there ...
    assert _unescaped_outside_code_spans(markdown) == []  # ... but only as text and code


@pytest.mark.parametrize("message", [
    "`a`b` and `c`",
    "`` x ` y `` then [link](http://e) <b>html</b> ![img](x)",
    "trailing ` lone",
    "`x`\n# heading\n- item",
])
def test_safe_markdown_leaves_only_text_and_code_spans(message):
    from torchlint.output.markdown import safe_markdown

    assert _unescaped_outside_code_spans(safe_markdown(message)) == []


def test_safe_markdown_fences_a_span_longer_than_its_backticks():
    from torchlint.output.markdown import code_span, safe_markdown

    assert code_span('f("``")') == '```f("``")```'
    assert code_span("`x") == "`` `x ``" and code_span(" a ") == "`  a  `"
    assert safe_markdown('call `` f("`") `` now.') == 'call ``f("`")`` now.'


# -- point 7: a named directory behind a symlink ----------------------------------------

def _outside_tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "runner_home" / "secrets"
    outside.mkdir(parents=True)
    (outside / "keys.py").write_text(f"import torch\nx = torch.symeig(3)  # {SECRET}\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(FLAGGED)
    (repo / "src").symlink_to(outside)
    return repo, outside


@pytest.mark.parametrize("named", ["src", "src/", "src/keys.py", "./src/."])
def test_a_named_directory_symlink_out_of_the_project_is_refused(tmp_path, named):
    repo, _ = _outside_tree(tmp_path)
    proc = _torchlint("check", "--no-cache", named, "train.py", cwd=repo)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert SECRET not in out + err
    assert "keys.py" not in out
    assert "skipped: symlink that points outside the project" in err
    assert "train.py:2:5: TL901" in out


def test_the_resolved_path_of_a_directory_outside_is_checked(tmp_path):
    repo, outside = _outside_tree(tmp_path)
    proc = _torchlint("check", "--no-cache", "--output-format", "concise", str(outside), cwd=repo)
    assert proc.returncode == 1 and "keys.py:2:5: TL901" in proc.stdout.decode()


def test_a_directory_symlink_inside_the_project_is_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.py").write_text(FLAGGED)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    proc = _torchlint("check", "--no-cache", "--output-format", "concise", "alias", cwd=tmp_path)
    assert proc.returncode == 1 and "alias/a.py:2:5: TL901" in proc.stdout.decode()


# -- point 10: -o never writes through a symlink ----------------------------------------

@pytest.mark.parametrize("command", ["check", "run"])
def test_output_file_symlink_is_refused(tmp_path, command):
    home = tmp_path / "runner_home"
    home.mkdir()
    bashrc = home / ".bashrc"
    bashrc.write_text("# the runner's shell profile\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(FLAGGED)
    (repo / "torchlint.sarif").symlink_to("../runner_home/.bashrc")
    if command == "check":
        args = ["check", "--no-cache", "--output-format", "sarif", "-o", "torchlint.sarif", "."]
    else:
        args = ["run", "--output-format", "sarif", "-o", "torchlint.sarif", "--", sys.executable, "-c", "pass"]
    proc = _torchlint(*args, cwd=repo)
    assert proc.returncode == 2
    assert "--output-file torchlint.sarif: is a symbolic link" in proc.stderr.decode()
    assert bashrc.read_text() == "# the runner's shell profile\n"
    assert (repo / "torchlint.sarif").is_symlink()


def test_output_file_under_a_symlinked_directory_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(FLAGGED)
    (repo / "reports").symlink_to(outside)
    for path in ("reports/out.sarif", str(repo / "reports" / "out.sarif")):
        proc = _torchlint("check", "--no-cache", "--output-format", "sarif", "-o", path, ".", cwd=repo)
        assert proc.returncode == 2 and "reports is a symbolic link" in proc.stderr.decode()
    assert list(outside.iterdir()) == []


def test_output_file_is_replaced_atomically_and_keeps_its_mode(tmp_path):
    (tmp_path / "train.py").write_text(FLAGGED)
    (tmp_path / "out").mkdir()
    report = tmp_path / "out" / "report.txt"
    report.write_text("old\n")
    report.chmod(0o640)
    hard = tmp_path / "hard-link-to-report"
    os.link(report, hard)
    proc = _torchlint("check", "--no-cache", "-o", "out/report.txt", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "train.py:2:5: TL901" in report.read_text()
    assert report.stat().st_mode & 0o777 == 0o640
    assert hard.read_text() == "old\n"  # a new file was renamed in; the other link is untouched
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["report.txt"]  # no temp file left
    umask = os.umask(0o022)
    os.umask(umask)
    proc = _torchlint("check", "--no-cache", "-o", "out/new.txt", ".", cwd=tmp_path)
    assert (tmp_path / "out" / "new.txt").stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would create it


# -- point 10: notebooks ----------------------------------------------------------------

def _notebook(path: Path, cells: list[str], metadata: dict) -> None:
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []}
                                          for s in cells], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))


R_METADATA = {"language_info": {"name": "R"}, "kernelspec": {"language": "R", "name": "ir", "display_name": "R"}}


def test_notebook_metadata_cannot_hide_python_cells(tmp_path, run_cli):
    _notebook(tmp_path / "nb.ipynb", ["library(ggplot2)\ndf <- read.csv('x') %>% filter(a)\n", FLAGGED], R_METADATA)
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert code == 1 and "nb.ipynb:cell 2:2:5: TL901" in out
    assert "TL000" not in out  # the R cell is the notebook's own language, not a syntax error


def test_a_real_r_notebook_reports_nothing(tmp_path, run_cli):
    _notebook(tmp_path / "r.ipynb", ["x <- c(1, 2)\nif (x > 0) { print('a') }\n", "f <- function(a) a$b\n"],
              R_METADATA)
    code, out, _ = run_cli("check", "--no-cache", "r.ipynb")
    assert code == 0 and "All checks passed!" in out


def test_notebook_code_is_held_to_max_file_size(tmp_path, run_cli):
    """The 10x allowance is for outputs: 2 MB of code under a 1 MB cap is not linted."""
    code_text = "import torch\n" + "x = torch.symeig(3)\n" * 80_000
    _notebook(tmp_path / "big.ipynb", [code_text], {})
    code, out, _ = run_cli("check", "--no-cache", "--max-file-size", "1MB", "--output-format", "concise",
                           "big.ipynb")
    assert code == 1
    assert "big.ipynb:1:1: TL000 the notebook's code cells are larger than max-file-size" in out
    assert "TL901" not in out
    # Outputs still get the allowance: the same code size with a large output is linted.
    doc = {"cells": [{"cell_type": "code", "source": FLAGGED, "metadata": {},
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": "y" * 3_000_000}]}],
           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "plots.ipynb").write_text(json.dumps(doc))
    code, out, _ = run_cli("check", "--no-cache", "--max-file-size", "1MB", "--output-format", "concise",
                           "plots.ipynb")
    assert "plots.ipynb:cell 1:2:5: TL901" in out


# -- point 10: a lone carriage return ---------------------------------------------------

def test_noqa_after_a_lone_carriage_return_is_on_the_next_line(tmp_path, run_cli):
    (tmp_path / "cr.py").write_bytes(b"import torch\nx = torch.symeig(3)\r# noqa\n")
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise", "cr.py")
    assert code == 1 and "cr.py:2:5: TL901" in out


@pytest.mark.parametrize("text", [b"import torch\nx = torch.symeig(3)  # noqa\ry = 1\n",
                                  b"import torch\r\nx = torch.symeig(3)  # noqa\r\n",
                                  b"import torch\rz = 1\rx = torch.symeig(3)  # noqa: TL901\r"])
def test_noqa_on_the_flagged_line_still_suppresses_with_cr_line_endings(tmp_path, run_cli, text):
    (tmp_path / "cr.py").write_bytes(text)
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise", "cr.py")
    assert code == 0, out


def test_the_github_format_escapes_legacy_and_azure_commands_inside_its_lines():
    """`##[...]` and `##vso[...]` act anywhere in a line (the legacy runner, an Azure agent
    reading this output); inside a `::warning` line they stay text."""
    from torchlint.diagnostics import Finding
    from torchlint.output.github import render

    finding = Finding(code="TL205", message="m ##vso[task.setvariable variable=x]1 ##[group]g", path="a.py",
                      row=1, col=1, end_row=1, end_col=2)
    out = render([finding])
    assert "##vso[" not in out and "##[" not in out, out
    assert "#\\u0023vso[task.setvariable" in out
