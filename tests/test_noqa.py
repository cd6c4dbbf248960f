"""`# noqa` suppression, ruff-style."""

from __future__ import annotations

import json

import pytest

from test_cli import write

SRC = """\
import torch

with torch.no_grad():
    loss = model(x).sum()
    loss.backward(){c1}
def forward(p: torch.Tensor):
    p.data -= 0.1 * p.grad{c2}
"""


def found(tmp_path, run_cli, c1="", c2="", header=""):
    write(tmp_path, "a.py", header + SRC.format(c1=c1, c2=c2))
    out = run_cli("check", "a.py", "--extend-select", "TL102", "--output-format", "json")[1]  # TL102: off by default
    return sorted(f["code"] for f in json.loads(out))


def test_blanket_and_specific_noqa(tmp_path, run_cli):
    assert found(tmp_path, run_cli) == ["TL101", "TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa") == ["TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa: TL101") == ["TL102"]
    assert found(tmp_path, run_cli, c1="  # noqa: TL102") == ["TL101", "TL102"]  # wrong code: kept
    assert found(tmp_path, run_cli, c1="  # NOQA:TL101,E501", c2="  # noqa: E501, TL102") == []
    assert found(tmp_path, run_cli, c1="  # noqa: E501") == ["TL101", "TL102"]  # other tools' codes
    assert found(tmp_path, run_cli, c1="  # type: ignore  # noqa: TL101") == ["TL102"]


def test_noqa_inside_a_string_is_not_a_comment(tmp_path, run_cli):
    write(tmp_path, "a.py", 'import torch\nwith torch.no_grad():\n    loss = m(x)\n    loss.backward(); s = "# noqa"\n')
    out = run_cli("check", "a.py", "--output-format", "json")[1]
    assert [f["code"] for f in json.loads(out)] == ["TL101"]


def test_file_level_noqa(tmp_path, run_cli):
    assert found(tmp_path, run_cli, header="# torchlint: noqa\n") == []
    assert found(tmp_path, run_cli, header="# torchlint: noqa: TL102\n") == ["TL101"]
    assert found(tmp_path, run_cli, header="# Torchlint: NOQA: tl101, tl102\n") == []


def test_multiline_statement_uses_first_line(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch.nn.functional as F\n"
          "loss = F.cross_entropy(  # noqa: TL201\n    logits,\n    y.float(),\n)\n"
          "loss = F.cross_entropy(logits,\n    y.float())  # noqa: TL201\n")
    out = json.loads(run_cli("check", "a.py", "--output-format", "json")[1])
    assert [(f["location"]["row"], f["noqa_row"]) for f in out] == [(4, 4)]


# A form feed or U+2028 inside a line, or a lone CR ending one: Python's tokenizer counts
# rows as the parser does (\n, \r\n, \r), where str.splitlines() would count one row more.
LINE_SEPARATORS = {"form feed": ("x = 1  # a\x0cb", "\n"), "U+2028": ("x = 1  # a\u2028b", "\n"),
                   "lone CR": ("x = 1", "\r")}
TRICKY = "import torch{nl}{first}{nl}with torch.no_grad():{nl}    loss = model(x).sum(){nl}    loss.backward(){c}{nl}"


def _tricky(kind: str, comment: str = "") -> str:
    first, nl = LINE_SEPARATORS[kind]
    return TRICKY.format(first=first, nl=nl, c=comment)


@pytest.mark.parametrize("kind", LINE_SEPARATORS)
def test_noqa_after_a_line_separator_suppresses_its_own_row(tmp_path, run_cli, kind):
    write(tmp_path, "a.py", _tricky(kind).encode())
    out = json.loads(run_cli("check", "a.py", "--output-format", "json")[1])
    assert [(f["code"], f["location"]["row"]) for f in out] == [("TL101", 5)]
    write(tmp_path, "a.py", _tricky(kind, "  # noqa: TL101").encode())
    out = run_cli("check", "a.py", "--extend-select", "TL001", "--output-format", "json")[1]
    assert json.loads(out) == []  # suppressed, and the directive counts as used (no TL001)


@pytest.mark.parametrize("kind", LINE_SEPARATORS)
def test_add_noqa_after_a_line_separator_comments_the_right_row(tmp_path, run_cli, kind):
    path = write(tmp_path, "a.py", _tricky(kind).encode())
    code, _, err = run_cli("check", "a.py", "--add-noqa")
    assert code == 0 and "Added 1 noqa directive." in err
    assert path.read_bytes() == _tricky(kind, "  # noqa: TL101").encode()
    assert run_cli("check", "a.py")[0] == 0


@pytest.mark.parametrize("kind", LINE_SEPARATORS)
def test_language_server_noqa_action_and_hover_after_a_line_separator(kind):
    from lsprotocol import types
    from pygls.workspace import TextDocument

    from torchlint.lsp_code_actions import hover, noqa_edit
    from torchlint.lsp_positions import DocumentIndex

    source = _tricky(kind)
    index = DocumentIndex(TextDocument("file:///x.py", source))
    edit = noqa_edit(index.document, 5, "TL101", index)
    assert edit is not None and edit.new_text == "  # noqa: TL101"
    assert (edit.range.start.line, edit.range.start.character) == (4, len("    loss.backward()"))
    assert noqa_edit(index.document, 2, "TL101", index).range.start.line == 1

    suppressed = DocumentIndex(TextDocument("file:///x.py", _tricky(kind, "  # noqa: E501")))
    edit = noqa_edit(suppressed.document, 5, "TL101", suppressed)
    assert edit.new_text == ", TL101" and edit.range.start.character == len("    loss.backward()  # noqa: E501")
    assert noqa_edit(suppressed.document, 4, "TL101", suppressed).new_text == "  # noqa: TL101"
    [directive] = suppressed.directives().on_row(5)
    assert directive.code_set == {"E501"}
    assert suppressed.directives().on_row(2) == []

    # Hover on the code of a noqa comment on the row after the separator names that rule.
    class Server:
        findings: dict = {}  # no diagnostics to hover on

        def document(self, uri):
            return TextDocument(uri, _tricky(kind, "  # noqa: TL101"))

    def hover_at(line, character):
        return hover(Server(), types.HoverParams(text_document=types.TextDocumentIdentifier(uri="file:///x.py"),
                                                 position=types.Position(line=line, character=character)))

    column = len("    loss.backward()  # noqa: TL1")
    found = hover_at(4, column)
    assert found is not None and "backward-under-no-grad" in found.contents.value
    assert (found.range.start.line, found.range.start.character) == (4, column - 3)
    assert hover_at(3, column) is None and hover_at(5, 0) is None


def test_language_server_knows_rows_inside_a_string_after_a_lone_cr():
    from pygls.workspace import TextDocument

    from torchlint.lsp_code_actions import noqa_edit

    doc = TextDocument("file:///x.py", "a = '''x\ry'''\rb = 2\r")
    assert noqa_edit(doc, 1, "TL101") is None  # row 1 ends inside the string
    assert noqa_edit(doc, 3, "TL101").new_text == "  # noqa: TL101"


def test_directives_are_parsed_from_real_comments_with_their_columns():
    from torchlint import noqa

    text = "x = '# noqa: TL101'  # NoQA:tl102,E501 why\n# torchlint: noqa: TL201\ny = 1  # noqa\n"
    found = noqa.parse(text)
    line = found.by_row[1]
    assert line.code_set == {"TL102", "E501"} and [c.text for c in line.codes] == ["tl102", "E501"]
    assert text.split("\n")[0][line.start:line.end] == "# NoQA:tl102,E501"
    assert found.by_row[3].codes is None and found.file_codes == {"TL201"} and not found.file_all
    suppression = noqa.Suppression(found)
    assert suppression.suppresses("TL102", 1) and not suppression.suppresses("TL101", 1)
    assert suppression.suppresses("TL201", 7) and suppression.suppresses("TL999", 3)
    assert suppression.used == {(1, "TL102"), (3, "TL999")}  # file-level ones are not TL001's business
