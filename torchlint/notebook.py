"""Jupyter notebooks (.ipynb): the code cells are linted as one program, in order, as the
kernel runs them; findings are reported by cell number (1-based, counting every cell as
the notebook's UI does) and line within that cell, like ruff (`nb.ipynb:cell 3:4:1`).

IPython syntax is not Python: line magics (`%time x`), shell escapes (`!pip ...`,
`files = !ls`), help (`?obj`, `obj??`) and cell magics (`%%bash`) are blanked out before
parsing, one line for one line, so every other line keeps its row and column. A line is
only taken for a magic where a statement could start (not inside brackets or a string),
so `(a\\n % b)` stays Python. A cell with a syntax error is reported as TL000 at its own
cell and line and left out, so it does not hide the findings of the other cells.

An .ipynb that is not valid JSON, or not a notebook, is reported as TL000 naming the
file: a notebook is never reported clean without being read.

The notebook's metadata is the checked tree's, so it cannot switch linting off: a notebook
that declares another kernel language (`language_info.name = "R"`) is still linted, cell by
cell, and only its cells that do not parse as Python are passed over silently (they are the
other language's; a Python kernel could not run them either). Nor can its size allowance
hide code: the JSON may be SIZE_FACTOR times max-file-size for outputs and attachments, but
its code cells together are held to max-file-size, like a .py file."""

from __future__ import annotations

import ast
import io
import re

from torchlint.diagnostics import Finding, syntax_error_finding
from torchlint.fast_dataclass import dataclass, field, replace
from torchlint.safe_io import DEFAULT_MAX_FILE_SIZE, format_size
from torchlint.records import Edit, Fix
from torchlint.noqa import Suppression, parse as parse_directives
from torchlint.source import NOTEBOOK_SUFFIX as NOTEBOOK_SUFFIX, is_notebook as is_notebook  # re-exported
from torchlint.source import SourceFile, newer_syntax_hint, physical_lines

TYPE_CHECKING = False
if TYPE_CHECKING:  # the walk is imported when a notebook is linted, not by a cache hit
    from typing import Any, Optional, Sequence
    from torchlint.checker import RuleClass

SIZE_FACTOR = 10  # a notebook may be this many times max-file-size (outputs are not linted)
# What a `--fix` implementation should print for a notebook until it can rewrite cells.
FIX_UNSUPPORTED = "fixes are not applied to Jupyter notebooks (.ipynb); their findings are reported only"

# Cell magics whose body is Python run by the kernel; any other `%%magic` cell (bash,
# writefile, html, ...) is not Python and is skipped whole.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})
_CELL_MAGIC = re.compile(r"^\s*%%(\w+)")
# `%%writefile [-a] name.py` (or `%%file`): the cell's body is that Python file, not code
# the kernel runs; it is linted as a module of its own (see written_python).
_WRITEFILE = re.compile(r"^\s*%%(?:writefile|file)\s+(?:(?:-a|--append)\s+)?(?P<name>[\"']?[^\s\"']+\.pyw?[\"']?)\s*$")
# %magic, !shell, ?help, obj?, and wildcard help (`torch.*Tensor?`, IPython's psearch)
_LINE_MAGIC = re.compile(r"^\s*(?:[%!?]|[A-Za-z_*][\w.*]*\?{1,2}\s*$)")
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")  # x = !ls


@dataclass
class Cell:
    """A notebook's code cell."""

    number: int  # 1-based position among all cells
    lines: list[str]  # source lines, without line endings
    first_row: int = 0  # 1-based row of its first line in the concatenated program


@dataclass
class Notebook:
    """A notebook's code cells."""

    path: str
    cells: list[Cell] = field(default_factory=list)  # code cells only, in order
    # The kernel language the metadata declares when it is not Python ("r", "julia"): cells
    # that are not Python are then expected, and are skipped without a TL000.
    other_language: Optional[str] = None

    def program(self) -> tuple[str, list[tuple[int, int]]]:
        """The code cells as one Python text (IPython syntax blanked), and for each row of
        that text (index row-1) its (cell number, row within the cell)."""
        rows: list[tuple[int, int]] = []
        out: list[str] = []
        for cell in self.cells:
            cell.first_row = len(out) + 1
            out.extend(python_lines(cell.lines))
            rows.extend((cell.number, i) for i in range(1, len(cell.lines) + 1))
        return "".join(line + "\n" for line in out), rows

    def cell_line(self, number: int, row: int) -> str:
        for cell in self.cells:
            if cell.number == number:
                return cell.lines[row - 1] if 0 < row <= len(cell.lines) else ""
        return ""


class NotebookError(Exception):
    def __init__(self, message: str, row: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.message, self.row, self.col = message, row, col


def parse_notebook(path: str, data: bytes, max_code_bytes: Optional[int] = None) -> Notebook:
    """The code cells of an nbformat 4 notebook; NotebookError says why it is not one, or
    that its code cells hold more than `max_code_bytes` (UTF-8) together."""
    import json  # only for a notebook: a .py run never needs the JSON decoder

    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"notebook is not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"notebook is not valid JSON text: {exc}") from None
    except RecursionError:
        raise NotebookError("notebook JSON is nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        if isinstance(doc, dict) and "worksheets" in doc:
            raise NotebookError("nbformat 3 notebooks are not supported; convert it with "
                                "`jupyter nbconvert --to notebook --nbformat 4`")
        raise NotebookError("not a Jupyter notebook: no `cells` list at the top level")
    notebook = Notebook(path, other_language=_other_language(doc.get("metadata")))
    code_bytes = 0
    for number, cell in enumerate(doc["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"cell {number}: `source` is neither a string nor a list of strings")
        code_bytes += len(source.encode("utf-8", "surrogatepass"))
        if max_code_bytes is not None and code_bytes > max_code_bytes:
            raise NotebookError(f"the notebook's code cells are larger than max-file-size "
                                f"({format_size(max_code_bytes)}); not linted (raise `max-file-size` to check it)")
        notebook.cells.append(Cell(number, physical_lines(source)))
    return notebook


_PYTHON_NAMES = ("python", "python2", "python3", "ipython", "ipython2", "ipython3")


def _other_language(metadata: Any) -> Optional[str]:
    """The non-Python language the metadata declares, or None (Python, or nothing said:
    Jupyter's default kernel is Python). Untrusted: it only decides whether a cell that
    does not parse is reported."""
    if not isinstance(metadata, dict):
        return None
    for section, key in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(section, {}).get(key) if isinstance(metadata.get(section), dict) else None
        if isinstance(value, str) and value and value.lower() not in _PYTHON_NAMES:
            return value.lower()
    return None


def written_python(lines: list[str]) -> Optional[list[str]]:
    """The body of a `%%writefile name.py` cell (the lines after the magic), or None."""
    return lines[1:] if lines and _WRITEFILE.match(lines[0]) else None


def leading_indent(lines: list[str]) -> str:
    """The indent IPython strips from a cell (its `leading_indent` transformer): that of the
    first non-blank line, removed from every line that starts with it."""
    first = next((line for line in lines if line.strip()), "")
    return first[: len(first) - len(first.lstrip(" \t"))]


def indent_shift(line: str, indent: str) -> int:
    """How many columns `python_lines` took off the front of `line` (a cell's own line)."""
    return len(indent) if indent and line.startswith(indent) else 0


def python_lines(lines: list[str]) -> list[str]:
    """A cell's lines as IPython runs them (same number of lines): the cell's common leading
    indent stripped, IPython-only syntax blanked."""
    if not lines:
        return []
    indent = leading_indent(lines)
    if indent:
        lines = [line[indent_shift(line, indent):] for line in lines]
    magic = _CELL_MAGIC.match(lines[0])
    if magic:
        if magic.group(1) not in _PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines = [""] + lines[1:]
    out: list[str] = []
    continued = False  # the previous line was a magic ending in a backslash
    clean = 0  # out[:clean] ends at a statement boundary outside any bracket or string
    for line in lines:
        if continued:
            out.append("")
            continued = line.rstrip().endswith("\\")
            clean = len(out)
            continue
        if (_LINE_MAGIC.match(line) or _ASSIGNED_MAGIC.match(line)) and _at_statement_start(out, clean):
            indent = line[: len(line) - len(line.lstrip())]
            # `pass` keeps an indented block that held only the magic valid.
            out.append(indent + "pass" if indent else "")
            continued = line.rstrip().endswith("\\")
            clean = len(out)
            continue
        out.append(line)
    return out


def _at_statement_start(previous: list[str], clean: int) -> bool:
    """Whether a new statement may start after `previous` (not inside brackets, a string
    or a backslash continuation). Only asked for lines that look like magics; tokenizes
    from the last known statement boundary `clean`, so a cell of many magics stays linear."""
    if previous and previous[-1].endswith("\\"):
        return False
    import tokenize  # only for a line that looks like a magic

    for start in (clean, 0):  # the suffix may dedent below its first line: then all of it
        try:
            for _ in tokenize.generate_tokens(io.StringIO("".join(line + "\n" for line in previous[start:])).readline):
                pass
        except tokenize.TokenError:
            return False  # EOF inside brackets or a multi-line string
        except (SyntaxError, ValueError):
            if start == 0:
                return True  # broken earlier code: the parse reports it
            continue
        return True
    return True


class NotebookSource(SourceFile):
    """A notebook's raw text, plus its cells for code frames and fingerprints."""

    def __init__(self, path: str, text: str, notebook: Optional[Notebook]) -> None:
        super().__init__(path, text)
        self.notebook = notebook

    def cell_line(self, number: int, row: int) -> str:
        return self.notebook.cell_line(number, row) if self.notebook is not None else ""

    def file_line(self, cell: int, row: int) -> Optional[int]:
        """The line of the .ipynb file that holds line `row` of cell `cell` (1-based), or
        None when it cannot be told (see notebook_positions)."""
        if not hasattr(self, "_file_lines"):
            from torchlint.notebook_positions import cell_file_lines

            self._file_lines = cell_file_lines(self.text)
        lines = (self._file_lines or {}).get(cell, [])
        return lines[row - 1] if 0 < row <= len(lines) else None


def load_source(path: str, data: bytes) -> Optional[NotebookSource]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    try:
        notebook: Optional[Notebook] = parse_notebook(path, data)
    except NotebookError:
        notebook = None
    return NotebookSource(path, text, notebook)


def lint_notebook(path: str, data: bytes, rule_classes: Sequence[RuleClass], parse_all: bool = True,
                  options: Optional[dict[str, dict]] = None, rule_errors: Optional[list] = None,
                  max_code_bytes: int = DEFAULT_MAX_FILE_SIZE, index: Any = None) -> list[Finding]:
    """Findings for a notebook, positioned by cell; TL000 when it cannot be read as one."""
    try:
        notebook = parse_notebook(path, data, max_code_bytes)
    except NotebookError as exc:
        return [syntax_error_finding(path, exc.message, exc.row, exc.col)]
    return lint_cells(notebook, rule_classes, parse_all=parse_all, options=options, rule_errors=rule_errors,
                      index=index)


def lint_cells(notebook: Notebook, rule_classes: Sequence[RuleClass], parse_all: bool = True,
               options: Optional[dict[str, dict]] = None, rule_errors: Optional[list] = None,
               index: Any = None) -> list[Finding]:
    """Findings for a notebook's code cells (from a file, or an editor's open notebook);
    `index` (a ProjectIndex): the modules of the project its cells import."""
    path = notebook.path
    text, rows = notebook.program()
    findings: list[Finding] = []
    # Each cell must parse on its own (the kernel runs them one by one): a broken cell is
    # reported where it is and blanked, so the rest of the notebook is still linted.
    lines = text.split("\n")
    for cell in notebook.cells:
        body = lines[cell.first_row - 1: cell.first_row - 1 + len(cell.lines)]
        error = _cell_syntax_error(path, "\n".join(body) + "\n", cell.first_row)
        if error is not None:
            if notebook.other_language is None:  # in an R notebook, an R cell is no error
                findings.append(error)
            lines[cell.first_row - 1: cell.first_row - 1 + len(cell.lines)] = [""] * len(cell.lines)
    program = "\n".join(lines)
    # noqa comments as written, including those on the lines of the cells just blanked.
    findings = Suppression(parse_directives(text)).apply(findings)
    starts = tuple(cell.first_row for cell in notebook.cells)
    from torchlint.checker import check_source

    findings += [f for f in check_source(path, program.encode("utf-8"), rule_classes, parse_all=parse_all,
                                         options=options, rule_errors=rule_errors, index=index,
                                         cell_starts=starts)
                 if f.code != "TL000" or not findings]
    findings += _written_files(notebook, text, rule_classes, parse_all, options, rule_errors, index)
    written = {c.number: c.lines for c in notebook.cells}
    indents = {c.number: leading_indent(c.lines) for c in notebook.cells}
    program_lines = program.split("\n")
    return sorted((f if f.cell is not None else _in_cell(f, rows, program_lines, written, indents) for f in findings),
                  key=Finding.sort_key)


def _written_files(notebook: Notebook, program: str, rule_classes: Sequence[RuleClass], parse_all: bool,
                   options: Optional[dict[str, dict]], rule_errors: Optional[list], index: Any) -> list[Finding]:
    """Findings for the Python files that `%%writefile` cells write, each linted on its own (it
    is a module, not part of the kernel's program), already placed in their cell: row r of the
    body is row r + 1 of the cell. The notebook's file-level `# torchlint: noqa` covers them."""
    from torchlint.checker import check_source

    directives = parse_directives(program)
    out: list[Finding] = []
    for cell in notebook.cells:
        body = written_python(cell.lines)
        if body is None:
            continue
        found = check_source(notebook.path, "".join(line + "\n" for line in body).encode("utf-8", "surrogatepass"),
                             rule_classes, parse_all=parse_all, options=options, rule_errors=rule_errors, index=index)
        out += [_shifted(f, cell.number) for f in found if not directives.file_suppresses(f.code)]
    return out


def _shifted(f: Finding, cell: int) -> Finding:
    fix = f.fix and Fix(f.fix.message, tuple(Edit((e.start[0] + 1, e.start[1]), (e.end[0] + 1, e.end[1]), e.content)
                                          for e in f.fix.edits), f.fix.applicability)
    return replace(f, cell=cell, row=f.row + 1, end_row=f.end_row + 1, fix=fix)


def _cell_syntax_error(path: str, body: str, first_row: int) -> Optional[Finding]:
    try:
        ast.parse(body)
    except SyntaxError as exc:
        row = exc.lineno or 1
        message = f"SyntaxError: {exc.msg}"
        hint = newer_syntax_hint(body.split("\n")[row - 1] if row <= body.count("\n") else "")
        if hint:
            message += f" ({hint})"
        return syntax_error_finding(path, message, row + first_row - 1, exc.offset or 1)
    except (ValueError, MemoryError, RecursionError) as exc:
        return syntax_error_finding(path, f"cannot parse cell: {exc}", first_row, 1)
    return None


def _in_cell(f: Finding, rows: list[tuple[int, int]], program_lines: list[str],
             written: dict[int, list[str]], indents: Optional[dict[int, str]] = None) -> Finding:
    """A finding on the concatenated program, re-positioned to its cell and row in it (and
    column, where the cell's leading indent was stripped); its fix too, or none when the
    fix reaches outside the cell or touches a line whose IPython syntax was blanked (the
    program's text there is not the cell's)."""
    if not 0 < f.row <= len(rows):
        return f
    indents = indents or {}
    cell, row = rows[f.row - 1]
    end_cell, end_row = rows[f.end_row - 1] if 0 < f.end_row <= len(rows) else (cell, row)
    shift = indent_shift(written[cell][row - 1], indents.get(cell, "")) if cell in written else 0
    if end_cell != cell:  # never span cells: stop at the start cell's row
        end_row, end_col = row, f.col + shift + 1
    else:
        end_col = f.end_col + (indent_shift(written[cell][end_row - 1], indents.get(cell, ""))
                               if cell in written else 0)
    return replace(f, cell=cell, row=row, col=f.col + shift, end_row=end_row, end_col=end_col,
                   fix=_fix_in_cell(f.fix, cell, rows, program_lines, written, indents) if f.fix else None)


def _fix_in_cell(fix: Fix, cell: int, rows: list[tuple[int, int]], program_lines: list[str],
                 written: dict[int, list[str]], indents: Optional[dict[int, str]] = None) -> Optional[Fix]:
    indent = (indents or {}).get(cell, "")
    edits = []
    for edit in fix.edits:
        moved = []
        for row, col in (edit.start, edit.end):
            if not 0 < row <= len(rows) or rows[row - 1][0] != cell:
                return None
            cell_row = rows[row - 1][1]
            line = written[cell][cell_row - 1]
            shift = indent_shift(line, indent)
            if program_lines[row - 1] != line[shift:] or (shift and "\n" in edit.content):
                return None  # new lines would not carry the cell's stripped indent
            moved.append((cell_row, col + shift))
        edits.append(Edit(moved[0], moved[1], edit.content))
    return Fix(fix.message, tuple(edits), fix.applicability)
