"""Parallel linting and the cache never change results."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import FIXTURES, cache_entry_files, read_cache_entries, write_cache_entries
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


def _entry_file(cache: Path) -> Path:
    (entry,) = cache_entry_files(cache)
    return entry


def _age(path: Path, seconds: float = 10) -> None:
    """Make the file look older than the racy window, as if edited a while ago."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def test_warm_run_reads_the_cache_and_content_changes_invalidate(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    _age(tmp_path / "a.py")
    first = _json(run_cli, cwd=tmp_path)
    cache = tmp_path / ".torchlint_cache"
    entries = read_cache_entries(cache)
    (entry,) = entries.values()
    assert entry["mtime"] is not None  # old enough to trust its mtime
    entry["findings"][0]["message"] = "served from cache"
    write_cache_entries(cache, entries)
    assert _json(run_cli, cwd=tmp_path)[0]["message"] == "served from cache"
    # Different settings, different key: recomputed.
    assert _json(run_cli, "--ignore", "TL102", cwd=tmp_path)[0]["message"] == first[0]["message"]
    # Changed content: recomputed.
    write(tmp_path, "a.py", BAD + "\n")
    assert _json(run_cli, cwd=tmp_path)[0]["message"] == first[0]["message"]


def test_same_size_same_mtime_edit_is_not_missed(tmp_path, run_cli):
    path = write(tmp_path, "a.py", BAD)
    first = _json(run_cli, cwd=tmp_path)
    st = path.stat()
    path.write_text(BAD.replace("loss.backward()", "print(loss)    "))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert len(first) == 2 and [f["code"] for f in _json(run_cli, cwd=tmp_path)] == ["TL102"]


def test_corrupt_entries_are_ignored(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    _age(tmp_path / "a.py")
    first = _json(run_cli, cwd=tmp_path)
    cache = tmp_path / ".torchlint_cache"
    entry_file = _entry_file(cache)
    data = entry_file.read_bytes()
    entries = read_cache_entries(cache)
    entry_file.write_bytes(data[:len(data) // 2])  # half-written
    assert _json(run_cli, cwd=tmp_path) == first
    for entry in entries.values():
        entry["findings"] = [{"bogus": 1}]  # foreign shape, under our own MAC
    write_cache_entries(cache, entries)
    assert _json(run_cli, cwd=tmp_path) == first
    assert read_cache_entries(cache) != entries  # re-linted and rewritten


def test_no_cache_and_cache_dir(tmp_path, run_cli):
    write(tmp_path, "a.py", BAD)
    _json(run_cli, "--no-cache", cwd=tmp_path)
    assert not (tmp_path / ".torchlint_cache").exists()
    _json(run_cli, "--cache-dir", "elsewhere", cwd=tmp_path)
    assert _entry_file(tmp_path / "elsewhere").is_file()


def test_syntax_errors_are_cached_too(tmp_path, run_cli):
    write(tmp_path, "broken.py", "import torch\ndef f(:\n")
    assert [f["code"] for f in _json(run_cli, cwd=tmp_path)] == ["TL000"]
    assert [f["code"] for f in _json(run_cli, cwd=tmp_path)] == ["TL000"]


def test_a_cached_fix_without_the_shape_of_a_fix_is_a_miss(tmp_path, run_cli):
    """The cache reads fixes back as typed records: an entry whose fix is not one is dropped
    and the file linted afresh, so the fix engine never meets a malformed fix."""
    write(tmp_path, "a.py", "import torch\nwith torch.no_grad:\n    pass\n")
    _age(tmp_path / "a.py")
    [first] = _json(run_cli, cwd=tmp_path)
    assert first["fix"]["edits"]
    cache = tmp_path / ".torchlint_cache"
    for broken in ({"edits": [{"content": "()"}]}, {**first["fix"], "applicability": "sometimes"},
                   {**first["fix"], "edits": [{**first["fix"]["edits"][0], "location": {"row": 0, "column": 1}}]}):
        entries = read_cache_entries(cache)
        (entry,) = entries.values()
        entry["findings"][0].update(message="served from cache", fix=broken)
        write_cache_entries(cache, entries)
        assert _json(run_cli, cwd=tmp_path) == [first]
    entries = read_cache_entries(cache)
    (entry,) = entries.values()
    entry["findings"][0]["fix"]["message"] = "a cached fix"
    write_cache_entries(cache, entries)
    [served] = _json(run_cli, cwd=tmp_path)
    assert served["fix"] == {**first["fix"], "message": "a cached fix"}
    code, _, err = run_cli("check", "--fix", "a.py")
    assert code == 0, err
    assert (tmp_path / "a.py").read_text() == "import torch\nwith torch.no_grad():\n    pass\n"


def test_entries_stored_in_a_run_are_kept_out_of_memory_and_saved(tmp_path, monkeypatch):
    """A cold run over many files must not hold each stored entry in memory: each is written
    to its own file as it is stored, and read back from there."""
    import tracemalloc

    from torchlint import integrity
    from torchlint.cache import Cache
    from torchlint.diagnostics import Finding

    monkeypatch.setattr(integrity, "load_key", lambda roots: b"k" * 32)
    cache = Cache(tmp_path / "cache", tmp_path)
    finding = Finding(code="TL101", message="m", path="x.py", row=1, col=1, end_row=1, end_col=2)
    deps = {str(tmp_path / f"dep{n}.py"): None for n in range(10)}
    cache.store(str(tmp_path / "warm-up.py"), "s", "0" * 64, (1, 1, 1, 1), [finding], None, deps)
    tracemalloc.start()
    for n in range(500):
        cache.store(str(tmp_path / f"f{n}.py"), "s", "0" * 64, (1, 1, 1, 1), [finding], None, deps)
    grown = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert grown < 500 * 400  # held in memory, the packed JSON took 660 bytes an entry
    stored = cache.entry("f7.py")
    assert stored is not None and stored["findings"][0]["code"] == "TL101" and len(stored["deps"]) == 10
    reloaded = Cache(tmp_path / "cache", tmp_path)
    assert reloaded.entry("f499.py")["hash"] == "0" * 64 and reloaded.entry("f500.py") is None
    assert len(cache_entry_files(tmp_path / "cache")) == 501


def test_a_planted_file_at_a_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    """Entries are written through a new file of a random name, created exclusively: a shipped
    cache cannot plant a FIFO (a hang), a device or a hard link to a tree file (overwritten)
    where the next write will go."""
    from torchlint import integrity
    from torchlint.cache import Cache, entry_file

    monkeypatch.setattr(integrity, "load_key", lambda roots: b"k" * 32)
    victim = write(tmp_path, "victim.py", "precious = 1\n")
    slot = entry_file(str(tmp_path / "cache"), str(tmp_path / "a.py"))
    os.makedirs(os.path.dirname(slot))
    monkeypatch.setattr(os, "urandom", lambda n: b"\0" * n)  # the attacker guessed the name
    planted = f"{slot}.{os.getpid()}.{'00' * 6}.tmp"
    os.link(victim, planted)
    Cache(str(tmp_path / "cache"), str(tmp_path)).store(str(tmp_path / "a.py"), "s", "0" * 64, None, [], None)
    assert victim.read_text() == "precious = 1\n" and not os.path.exists(slot)
    os.unlink(planted)
    os.mkfifo(planted)
    Cache(str(tmp_path / "cache"), str(tmp_path)).store(str(tmp_path / "a.py"), "s", "0" * 64, None, [], None)
    assert not os.path.exists(slot)  # refused, not blocked on the FIFO


def test_a_file_modified_just_before_its_read_is_never_vouched_for_by_its_stat(tmp_path):
    """Racy is judged when the file is stat'ed, not when its entry is stored: a lint that takes
    longer than the window must not let a same-tick edit after the read pass on its mtime."""
    from torchlint.linter import FileTask, lint_task_hashed

    fresh = write(tmp_path, "fresh.py", BAD)
    old = write(tmp_path, "old.py", BAD)
    _age(old)
    results = [lint_task_hashed(FileTask(path=str(p), display=p.name, codes=frozenset({"TL101"}))) for p in (fresh, old)]
    assert results[0].stat is None and results[0].digest  # hashed, but its stat vouches for nothing
    assert results[1].stat is not None and results[1].stat[1] == old.stat().st_mtime_ns


def test_what_a_run_remembers_stays_bounded_in_the_number_of_files(tmp_path, monkeypatch):
    """Peak memory of a cold run stays flat in the files (8 copies of a corpus at most 1.3x one):
    the entry-name memo is capped and a reading cache keeps no list of what it stored."""
    from torchlint import cache as cache_module, integrity
    from torchlint.cache import Cache

    monkeypatch.setattr(integrity, "load_key", lambda roots: b"k" * 32)
    monkeypatch.setattr(cache_module, "_MAX_KEYS", 50)
    cache = Cache(str(tmp_path / "cache"), str(tmp_path))
    for n in range(200):
        cache.store(str(tmp_path / f"f{n}.py"), "s", "0" * 64, (1, 1, 1, 1), [], None, {str(tmp_path / "m.py"): None})
    assert len(cache._keys) <= 50 and not cache._written
    assert cache.entry("f199.py") is not None and cache.entry("f3.py") is not None
    verifying = Cache(str(tmp_path / "cache"), str(tmp_path), read=False)  # --verify: serves what it stored
    assert verifying.entry("f3.py") is None
    verifying.store(str(tmp_path / "f3.py"), "s", "0" * 64, (1, 1, 1, 1), [], None)
    assert verifying.entry("f3.py") is not None
