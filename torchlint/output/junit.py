"""JUnit XML, as ruff writes it: one `<testsuite>` per file, one `<testcase>` with a
`<failure>` per finding (`name="org.torchlint.TL101"`, `line`, `column`); a clean run is one
passing test case, so CI dashboards count it. Built with ElementTree, which escapes the
markup; control characters, which XML 1.0 cannot carry at all, are escaped first."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from pathlib import PurePath

from torchlint.diagnostics import Finding
from torchlint.safe_io import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _classname(path: str) -> str:
    p = PurePath(path)
    return str(p.with_suffix("")) if p.suffix else path


def render(findings: list[Finding], sources: Any = None, **_: object) -> str:
    n = str(len(findings))
    suites = ET.Element("testsuites", name="torchlint", tests=n if findings else "1", failures=n, errors="0")
    if not findings:
        suite = ET.SubElement(suites, "testsuite", name="torchlint", tests="1", disabled="0", errors="0",
                              failures="0", package="org.torchlint")
        ET.SubElement(suite, "testcase", name="No errors found", classname="torchlint")
    for path, group in groupby(findings, key=lambda f: f.path):
        items = list(group)
        shown = printable(path)
        suite = ET.SubElement(suites, "testsuite", name=shown, tests=str(len(items)), disabled="0", errors="0",
                              failures=str(len(items)), package="org.torchlint")
        for f in items:
            case = ET.SubElement(suite, "testcase", name=f"org.torchlint.{f.code}", classname=printable(_classname(path)),
                                 line=str(f.row), column=str(f.col))
            where = f"cell {f.cell}, " if f.cell is not None else ""
            message = printable(f.message)
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = f"{where}line {f.row}, col {f.col}, {message}"
    ET.indent(suites, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
