"""Message snapshots: each fixture `X.py` has `X.snap` beside it with every finding's row,
column, code, message and help. A message change is a visible diff in review.

    pytest tests/test_snapshots.py --snapshot-update    # rewrite the .snap files
"""

from __future__ import annotations

import statistics

import pytest

from conftest import FIXTURES, lint_file

from torchlint import catalog

FIXTURE_FILES = sorted(FIXTURES.glob("TL*/*.py"))
# Notebook fixtures run every rule (they are not one rule's fixtures); rows are per cell.
NOTEBOOKS = sorted(FIXTURES.glob("notebooks/*.ipynb"))
ALL_CODES = {r.code for r in catalog.static_rules()}


def render(path) -> str:
    lines = []
    codes = ALL_CODES if path.suffix == ".ipynb" else {path.parent.name}
    for f in lint_file(path, codes):
        cell = f"cell {f.cell}:" if getattr(f, "cell", None) is not None else ""
        lines.append(f"{cell}{f.row}:{f.col}: {f.code} {f.message}")
        if f.help:
            lines.append(f"    help: {f.help}")
    return "\n".join(lines) + "\n" if lines else ""


@pytest.mark.parametrize("path", FIXTURE_FILES + NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_snapshot(path, request):
    snap = path.with_name(path.name + ".snap") if path.suffix == ".ipynb" else path.with_suffix(".snap")
    actual = render(path)
    if request.config.getoption("--snapshot-update"):
        if actual:
            snap.write_text(actual, encoding="utf-8")
        elif snap.exists():
            snap.unlink()
        return
    expected = snap.read_text(encoding="utf-8") if snap.exists() else ""
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
