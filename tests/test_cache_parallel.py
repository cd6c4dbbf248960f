"""Parallel linting and the cache never change results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import FIXTURES
from test_cli import BAD, write


def _json(run_cli, *args, cwd):
    code, out, err = run_cli("check", ".", "--select", "ALL", "--output-format", "json", *args, cwd=cwd)
    assert code in (0, 1), err
    return json.loads(out)


def _copy_fixtures(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES, root)
    return root


def test_jobs_and_cache_give_identical_findings(tmp_path, run_cli):
    root = _copy_fixtures(tmp_path)
    serial = _json(run_cli, "--no-cache", "--jobs", "1", cwd=root)
    assert len(serial) > 100
    assert _json(run_cli, "--no-cache", "--jobs", "2", cwd=root) == serial
    cold = _json(run_cli, "--jobs", "2", cwd=root)
    assert (root / ".torchlint_cache" / ".gitignore").read_text().strip().endswith("*")
    warm = _json(run_cli, "--jobs", "2", cwd=root)
    assert cold == warm == serial
    assert _json(run_cli, "--jobs", "1", cwd=root) == serial


def _entries(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*.json")]


def test_warm_run_reads_the_cache_and_content_changes_invalidate(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    first = _json(run_cli, cwd=tmp_path)
    entries = _entries(tmp_path / ".torchlint_cache")
    assert len(entries) == 1
    data = json.loads(entries[0].read_text())
    data["findings"][0]["message"] = "served from cache"
    entries[0].write_text(json.dumps(data))
    assert _json(run_cli, cwd=tmp_path)[0]["message"] == "served from cache"
    # Different settings, different key: recomputed.
    assert _json(run_cli, "--ignore", "TL102", cwd=tmp_path)[0]["message"] == first[0]["message"]
    # Changed content: recomputed.
    write(tmp_path, "a.py", BAD + "\n")
    assert _json(run_cli, cwd=tmp_path)[0]["message"] == first[0]["message"]


def test_corrupt_entries_are_ignored(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    first = _json(run_cli, cwd=tmp_path)
    for entry in _entries(tmp_path / ".torchlint_cache"):
        entry.write_text('{"key": "tru')  # half-written
    assert _json(run_cli, cwd=tmp_path) == first
    for entry in _entries(tmp_path / ".torchlint_cache"):
        entry.write_text('{"key": "other", "findings": [], "parse_error": null}')  # foreign
    assert _json(run_cli, cwd=tmp_path) == first


def test_no_cache_and_cache_dir(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    _json(run_cli, "--no-cache", cwd=tmp_path)
    assert not (tmp_path / ".torchlint_cache").exists()
    _json(run_cli, "--cache-dir", "elsewhere", cwd=tmp_path)
    assert _entries(tmp_path / "elsewhere")


def test_syntax_errors_are_cached_too(tmp_path, run_cli):
    write(tmp_path, "broken.py", "import torch\ndef f(:\n")
    assert [f["code"] for f in _json(run_cli, cwd=tmp_path)] == ["TL000"]
    assert [f["code"] for f in _json(run_cli, cwd=tmp_path)] == ["TL000"]
