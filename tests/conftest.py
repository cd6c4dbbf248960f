from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint.linter import FileTask, lint_task

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*((?:TL\d{3}[,\s]*)+)")


def expected_findings(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs from `# expect: TL101` comments, bugbear-style."""
    out = set()
    for row, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = EXPECT_RE.search(line)
        if m:
            for code in re.findall(r"TL\d{3}", m.group(1)):
                out.add((row, code))
    return out


def lint_file(path: Path, codes: set[str]):
    result = lint_task(FileTask(path=str(path), display=str(path), codes=frozenset(codes)))
    assert result.internal_error is None, result.internal_error
    return result.findings


@pytest.fixture
def run_cli(tmp_path, monkeypatch):
    """Run the CLI in-process: returns (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from torchlint.cli import main

    def run(*args: str, cwd: Path | None = None, input: str | bytes | None = None):
        monkeypatch.chdir(cwd or tmp_path)
        try:
            runner = CliRunner(mix_stderr=False)  # click < 8.2 mixes stderr into stdout by default
        except TypeError:
            runner = CliRunner()  # click >= 8.2 always captures stderr separately
        result = runner.invoke(main, list(args), input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run
