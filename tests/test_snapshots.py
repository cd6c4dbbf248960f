"""Fixture snapshots (ruff's shape): each fixture `X.py` has `X.snap` beside it with every
finding's row, column, code, message and help, then what `--fix` does to the fixture as a
unified diff ("Safe fix"), and what `--unsafe-fixes` changes on top of that ("Unsafe fix").
A message or fix change is a visible diff in review. One switch rewrites them all, and the
files generated from the catalog (tests/test_generated_files.py):

    pytest tests/test_snapshots.py --snapshot-update    # rewrite the .snap files
"""

from __future__ import annotations

import statistics

import pytest

from conftest import FIXTURES, fixed_text, lint_file

from torchlint import catalog
from torchlint.fix.files import text_diff
from torchlint.source import decode_source

FIXTURE_FILES = sorted(FIXTURES.glob("TL*/*.py"))
# Notebook fixtures run every rule (they are not one rule's fixtures); rows are per cell.
NOTEBOOKS = sorted(FIXTURES.glob("notebooks/*.ipynb"))
ALL_CODES = {r.code for r in catalog.static_rules()}
SAFE_FIX = "Safe fix (--fix):"
UNSAFE_FIX = "Unsafe fix (--fix --unsafe-fixes, after the safe fix):"


def render(path) -> str:
    lines = []
    codes = ALL_CODES if path.suffix == ".ipynb" else {path.parent.name}
    findings = lint_file(path, codes)
    for f in findings:
        cell = f"cell {f.cell}:" if getattr(f, "cell", None) is not None else ""
        lines.append(f"{cell}{f.row}:{f.col}: {f.code} {f.message}")
        if f.help:
            lines.append(f"    help: {f.help}")
    messages = "\n".join(lines) + "\n" if lines else ""
    if path.suffix == ".ipynb" or not any(f.fix for f in findings):  # notebooks are never fixed
        return messages
    return messages + render_fixes(path)


def render_fixes(path) -> str:
    """The fix sections: the safe fixes' diff on the fixture, then the unsafe fixes' diff on
    the safely fixed text (each left out when it changes nothing)."""
    code, name = path.parent.name, f"{path.parent.name}/{path.name}"
    original = decode_source(path.read_bytes())
    safe = fixed_text(path, code, unsafe=False)
    unsafe = fixed_text(path, code, unsafe=True)
    out = ""
    for title, before, after in ((SAFE_FIX, original, safe), (UNSAFE_FIX, safe, unsafe)):
        if before != after:
            out += f"\n{title}\n{text_diff(before, after, name)}"  # as --diff prints it
    return out


@pytest.mark.parametrize("path", FIXTURE_FILES + NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_snapshot(path, request):
    snap = path.with_name(path.name + ".snap") if path.suffix == ".ipynb" else path.with_suffix(".snap")
    actual = render(path)
    if request.config.getoption("--snapshot-update"):
        if actual:
            with open(snap, "w", encoding="utf-8", newline="") as out:
                out.write(actual)
        elif snap.exists():
            snap.unlink()
        return
    # newline="": a fixture's carriage returns and form feeds stay what they are in the diff.
    expected = ""
    if snap.exists():
        with open(snap, encoding="utf-8", newline="") as f:
            expected = f.read()
    assert actual == expected, (f"{snap.name} is out of date; if the change is intended, run "
                                "`pytest tests/test_snapshots.py --snapshot-update` and review the diff")


def test_no_orphan_snapshots():
    for snap in FIXTURES.glob("TL*/*.snap"):
        assert snap.with_suffix(".py").exists(), f"{snap} has no fixture"
    for snap in FIXTURES.glob("notebooks/*.snap"):
        assert snap.with_suffix("").exists(), f"{snap} has no notebook"


def test_messages_are_short_like_ruffs():
    """One short sentence says what is wrong; what to do goes in `help`, the why in the doc."""
    messages = [f.message for path in FIXTURE_FILES for f in lint_file(path, {path.parent.name})]
    assert messages
    assert statistics.median(len(m) for m in messages) < 100
    too_long = [m for m in messages if len(m) > 110]
    assert not too_long, too_long
