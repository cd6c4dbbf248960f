from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from torchlint.linter import FileTask, lint_task

FIXTURES = Path(__file__).parent / "fixtures"
# Rules the 2026-12 held-out triage turned off by default; tests whose programs exercise them
# select them (`--extend-select`).
OFF_SINCE_HELD_OUT = ("TL102,TL104,TL105,TL107,TL202,TL205,TL206,TL402,TL403,TL601,TL701,TL703,TL704,TL801,"
                      "TL804,TL903,TL908")
EXPECT_RE = re.compile(r"#\s*expect:\s*((?:TL\d{3}(?::\d+)?[,\s]*)+)")
CODE_RE = re.compile(r"(TL\d{3})(?::(\d+))?")


def _expectations(path: Path) -> list[tuple[int, str, int | None]]:
    """(line, code, column or None) from `# expect: TL101` / `# expect: TL101:9` comments."""
    out = []
    for row, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = EXPECT_RE.search(line)
        if m:
            for code, col in CODE_RE.findall(m.group(1)):
                out.append((row, code, int(col) if col else None))
    return out


def expected_findings(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs from `# expect: TL101` comments, bugbear-style."""
    return {(row, code) for row, code, _ in _expectations(path)}


def expected_columns(path: Path) -> set[tuple[int, int, str]]:
    """(line, column, code) for the expectations that name a column (`# expect: TL101:9`)."""
    return {(row, col, code) for row, code, col in _expectations(path) if col is not None}


@pytest.fixture(autouse=True, scope="session")
def _private_key_dir(tmp_path_factory):
    """The cache MAC key (torchlint.integrity) goes to a test directory, not the real home."""
    import os

    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


def cache_entry_files(cache_dir: Path) -> list[Path]:
    """The lint cache's entry files (torchlint/cache.py: one per checked file)."""
    return sorted(f for f in Path(cache_dir).glob("*/entries/*/*") if f.is_file() and not f.name.endswith(".tmp"))


def read_cache_entries(cache_dir: Path) -> dict[str, dict]:
    """{name: entry} of every entry file, decoded without checking its MAC (a test reads what
    it or an attacker wrote)."""
    import marshal

    entries = {}
    for path in cache_entry_files(cache_dir):
        name, entry = marshal.loads(path.read_bytes()[64:])
        entries[name] = entry
    return entries


def write_cache_entries(cache_dir: Path, entries: dict[str, dict], key: bytes | None = None) -> None:
    """Write entries where torchlint looks for them, sealed under `key` (default: this user's,
    as torchlint would after a test edited them; another key: an attacker's forgery)."""
    from torchlint import __version__
    from torchlint.cache import ENTRIES, _slot, seal_entry
    from torchlint.integrity import load_key

    key = key or load_key()
    assert key is not None
    for name, entry in entries.items():
        fan, rest = _slot(name)
        path = Path(cache_dir) / __version__ / ENTRIES / fan / rest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(seal_entry(key, name, entry))


def pytest_addoption(parser):
    parser.addoption("--snapshot-update", action="store_true", default=False,
                     help="rewrite the expected-output (.snap) files of the rule fixtures, and the files "
                          "generated from the catalog (rules_docs/*.md, the README's rule tables)")


def lint_file(path: Path, codes: set[str]):
    result = lint_task(FileTask(path=str(path), display=str(path), codes=frozenset(codes)))
    assert result.internal_error is None, result.internal_error
    return result.findings


def fixed_text(path: Path, code: str, unsafe: bool) -> str:
    """`path` fixed to a fixed point with `code`'s fixes, as `--fix` (`--unsafe-fixes` when
    `unsafe`) would write it; the snapshot of each fixture records the result as a diff."""
    from torchlint.fix.engine import encode_like, fix_text
    from torchlint.fix.policy import FixPolicy
    from torchlint.linter import lint_bytes
    from torchlint.source import decode_source

    task = FileTask(path=str(path), display=str(path), codes=frozenset({code}))
    data = path.read_bytes()

    def lint(text: str):
        return lint_bytes(task, encode_like(data, text)).findings

    outcome = fix_text(decode_source(data), lint_bytes(task, data).findings, lint,
                       FixPolicy(frozenset({code}), unsafe).allows)
    assert outcome.error is None and outcome.converged, (path, outcome.error)
    return outcome.text


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


@pytest.fixture(scope="session")
def benchmark_scripts():
    """Import scripts of benchmarks/ (not a package) by name: `benchmark_scripts("triage_packets")`."""
    folder = str(Path(__file__).resolve().parent.parent / "benchmarks")

    def load(*names: str) -> tuple:
        sys.path.insert(0, folder)
        try:
            return tuple(importlib.import_module(name) for name in names)
        finally:
            sys.path.remove(folder)
    return load
