"""Attacks a pull request can mount on a CI step that runs torchlint (issue 8): special and
linked files, a poisoned or misplaced cache, a hostile git config, broken output, terminal
escapes, and inputs that used to raise tracebacks. Each test failed before the hardening."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cache_entry_files, read_cache_entries, write_cache_entries

BAD = "import torch\nwith torch.no_grad():\n    loss = model(x)\n    loss.backward()\n"
SECRET = "ghp_SECRET_TOKEN_0123456789"


def _torchlint(*args: str, cwd: Path, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess: hangs and broken descriptors need a process boundary."""
    kwargs.setdefault("env", {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    if "stdout" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run([sys.executable, "-m", "torchlint", *args], cwd=cwd, timeout=timeout, **kwargs)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def _entry_file(root: Path, name: str = "train.py") -> Path:
    """The lint-cache entry file of `name` (torchlint/cache.py)."""
    from torchlint.cache import entry_file

    return Path(entry_file(str(root / ".torchlint_cache"), str(root / name)))


# -- 1. the cache is data, never trusted ----------------------------------------------

def test_a_cache_tracked_by_git_is_refused(tmp_path, run_cli):
    (tmp_path / "train.py").write_text(BAD)
    _git(tmp_path, "init", "-q")
    code, _, _ = run_cli("check", "--output-format", "json")
    assert code == 1
    entries = read_cache_entries(tmp_path / ".torchlint_cache")
    for entry in entries.values():
        entry["findings"] = []  # the attacker's committed cache hides every finding
    write_cache_entries(tmp_path / ".torchlint_cache", entries)  # even under this user's key
    (tmp_path / ".torchlint_cache" / ".gitignore").unlink()
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "poison")
    code, out, err = run_cli("check", "--output-format", "json")
    assert code == 1 and "TL101" in out
    assert "tracked by git" in err


def test_cache_dir_outside_the_project_from_config_is_refused(tmp_path, run_cli):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = ".."\n')
    (project / "train.py").write_text(BAD)
    code, _, err = run_cli("check", cwd=project)
    assert code == 1 and "outside the project" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]  # nothing written next to it


def test_a_dangling_gitignore_symlink_in_the_cache_is_not_followed(tmp_path, run_cli):
    (tmp_path / "train.py").write_text(BAD)
    cache = tmp_path / ".torchlint_cache"
    cache.mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-planted"
    (cache / ".gitignore").symlink_to(outside)
    code, _, _ = run_cli("check")
    assert code == 1
    assert not outside.exists()


@pytest.mark.parametrize("target", ["/dev/zero", "/proc/self/fd/0"])
def test_a_cache_entry_linked_to_a_device_neither_hangs_nor_blows_up(tmp_path, target):
    (tmp_path / "train.py").write_text(BAD)
    first = _torchlint("check", cwd=tmp_path)
    assert first.returncode == 1
    entry = _entry_file(tmp_path)
    entry.unlink()
    entry.symlink_to(target)
    # stdin is a pipe that never closes: reading /proc/self/fd/0 would block forever.
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--output-format", "json"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "TL101" in out.decode()


@pytest.mark.parametrize("payload", [
    b"[" * 100_000 + b"]" * 100_000,  # nesting past the recursion limit
    b"0" * 64 + b"\xff" * 100,  # a MAC-shaped prefix, then bytes marshal refuses
    b"null",
    b"",
])
def test_a_malformed_cache_entry_is_dropped_and_rewritten(tmp_path, run_cli, payload):
    (tmp_path / "train.py").write_text(BAD)
    run_cli("check")
    entry = _entry_file(tmp_path)
    entry.write_bytes(payload)
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 1 and "TL101" in out
    assert list(read_cache_entries(tmp_path / ".torchlint_cache")) == ["train.py"]  # rewritten, valid again


@pytest.mark.parametrize("shape", [{"settings": 5}, [], None, ("train.py",), ("other.py", "entry")])
def test_a_sealed_payload_of_the_wrong_shape_is_not_served(tmp_path, run_cli, shape):
    """Even bytes under our own MAC are type-checked after decoding (a future format, a bug)."""
    import marshal

    from torchlint.cache import _SEAL
    from torchlint.hashing import keyed_hash
    from torchlint.integrity import load_key

    (tmp_path / "train.py").write_text(BAD)
    run_cli("check")
    if shape == ("other.py", "entry"):  # another file's valid entry, copied into this slot
        (entry,) = read_cache_entries(tmp_path / ".torchlint_cache").values()
        shape = ("other.py", {**entry, "findings": []})
    payload = marshal.dumps(shape)
    _entry_file(tmp_path).write_bytes(keyed_hash(load_key(), _SEAL + payload).encode() + payload)
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 1 and "TL101" in out


def test_a_cache_entry_of_the_wrong_shape_is_not_served(tmp_path, run_cli):
    (tmp_path / "train.py").write_text(BAD)
    run_cli("check")
    entries = read_cache_entries(tmp_path / ".torchlint_cache")
    entries["train.py"]["findings"][0]["row"] = "1; rm -rf /"
    write_cache_entries(tmp_path / ".torchlint_cache", entries)  # under our MAC, still checked
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 1 and json.loads(out)[0]["location"]["row"] == 4


def test_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path, run_cli):
    source = tmp_path / "train.py"
    source.write_text(BAD)
    old = time.time() - 3600
    os.utime(source, (old, old))  # not "racy": the stat fast path is used
    assert run_cli("check")[0] == 1
    stat = source.stat()
    source.write_text(BAD.replace("loss.backward()", "y = loss.sum() "))
    assert source.stat().st_size == stat.st_size
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # `cp -p`, `touch -d`
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 0, out


def test_cache_keys_are_relative_so_a_moved_checkout_still_hits(tmp_path, run_cli):
    first = tmp_path / "a"
    first.mkdir()
    (first / "train.py").write_text(BAD)
    run_cli("check", cwd=first)
    entries = read_cache_entries(first / ".torchlint_cache")
    assert list(entries) == ["train.py"]
    entries["train.py"]["findings"][0]["message"] = "served from the moved cache"
    write_cache_entries(first / ".torchlint_cache", entries)
    moved = tmp_path / "b"
    first.rename(moved)
    code, out, _ = run_cli("check", "--output-format", "json", cwd=moved)
    assert json.loads(out)[0]["message"] == "served from the moved cache"


# -- 2 and 3. files: symlinks, special files, size --------------------------------------

@pytest.mark.parametrize("explicit", [False, True])
def test_symlinks_to_secrets_are_not_read_or_printed(tmp_path, monkeypatch, explicit):
    secrets = tmp_path / "home"
    secrets.mkdir()
    (secrets / ".git-credentials").write_text(f"https://user:{SECRET}@example.invalid\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "creds.py").symlink_to(secrets / ".git-credentials")
    (repo / "env_utils.py").symlink_to("/proc/self/environ")
    (repo / "train.py").write_text(BAD)
    args = ["creds.py", "env_utils.py", "train.py"] if explicit else ["."]
    proc = _torchlint("check", "--no-cache", *args, cwd=repo,
                      env={**os.environ, "CI_SECRET": SECRET, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    output = proc.stdout.decode() + proc.stderr.decode()
    assert SECRET not in output
    assert "creds.py: skipped: symlink that points outside the checked paths" in output
    assert "env_utils.py: skipped: symlink to a system file" in output
    assert "train.py:4:5: TL101" in output


def test_a_symlink_inside_the_tree_is_still_linted(tmp_path, run_cli):
    (tmp_path / "real.py").write_text(BAD)
    (tmp_path / "alias.py").symlink_to(tmp_path / "real.py")
    code, out, err = run_cli("check", "--no-cache", "--output-format", "concise")
    assert code == 1 and "alias.py:4:5" in out and "real.py:4:5" in out, err


@pytest.mark.parametrize("explicit", [False, True])
def test_fifos_and_devices_named_py_are_skipped_without_hanging(tmp_path, explicit):
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "train.py").write_text(BAD)
    args = ["x.py", "zero.py", "train.py"] if explicit else ["."]
    proc = _torchlint("check", "--no-cache", *args, cwd=tmp_path, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert "x.py: skipped: not a regular file" in err
    assert "zero.py: skipped: symlink to a system file" in err


def test_oversized_files_are_reported_not_read(tmp_path, run_cli):
    (tmp_path / "big.py").write_text("import torch\n" + "x = 1\n" * 2000)
    (tmp_path / "train.py").write_text(BAD)
    code, out, _ = run_cli("check", "--no-cache", "--max-file-size", "4KiB", "--output-format", "concise")
    assert code == 1
    assert "big.py:1:1: TL000 file is larger than max-file-size (4 KiB)" in out
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nmax-file-size = "1MB"\n')
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise")
    assert "big.py" not in out
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nmax-file-size = "lots"\n')
    code, _, err = run_cli("check", "--no-cache")
    assert code == 2 and "max-file-size" in err


# -- 5. git's fsmonitor in a checkout's own .git/config ----------------------------------

def test_a_hostile_git_config_runs_nothing(tmp_path):
    repo = tmp_path / "sdist"
    repo.mkdir()
    _git(repo, "init", "-q")
    marker = tmp_path / "pwned"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    _git(repo, "config", "core.fsmonitor", str(hook))
    (repo / "train.py").write_text(BAD)
    proc = _torchlint("check", "--no-cache", ".", cwd=repo)
    assert proc.returncode == 1
    assert not marker.exists()


# -- 8. noqa and rows follow Python's idea of a line -------------------------------------

@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x0b", "\x1c", "\x85"])
def test_noqa_stays_on_its_line_when_a_line_holds_form_feeds_or_separators(tmp_path, run_cli, separator):
    src = ("import torch\n"
           f"s = 'a{separator}b'  # plain string\n"
           "with torch.no_grad():\n"
           "    loss = model(x)\n"
           "    loss.backward()  # noqa: TL101\n"
           "    loss.backward()\n")
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise", "--select", "TL101")
    assert out.splitlines()[0].startswith("t.py:6:5: TL101"), out
    assert "t.py:5:" not in out


def test_noqa_in_a_docstring_does_not_silence_the_file(tmp_path, run_cli):
    (tmp_path / "t.py").write_text('"""Usage:\n# torchlint: noqa\n"""\n' + BAD)
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise")
    assert code == 1 and "TL101" in out


# -- 9. errors exit 2 with a message, not a traceback -----------------------------------

@pytest.mark.parametrize("content", [b"tool = 5\n", b"[tool]\ntorchlint = 5\n",
                                     b"[tool.torchlint]\nselect = ['TL1']\n# caf\xe9\n"])
def test_bad_config_files_exit_2_with_a_message(tmp_path, content):
    (tmp_path / "pyproject.toml").write_bytes(content)
    (tmp_path / "train.py").write_text(BAD)
    proc = _torchlint("check", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and "pyproject.toml" in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0"])
def test_non_finite_verify_timeout_exits_2(tmp_path, run_cli, value):
    (tmp_path / "train.py").write_text(BAD)
    code, _, err = run_cli("check", "--verify", "--verify-timeout", value)
    assert code == 2 and "--verify-timeout" in err


@pytest.mark.skipif(sys.platform != "linux", reason="non-UTF-8 file names need a byte-oriented file system")
@pytest.mark.parametrize("fmt", ["sarif", "json", "full", "concise", "github"])
def test_non_utf8_and_newline_file_names(tmp_path, fmt):
    os.makedirs(tmp_path, exist_ok=True)
    (Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.py"))).write_text(BAD)
    (tmp_path / "evil\nforged.py:1:1: TL999 fake.py").write_text(BAD)
    proc = _torchlint("check", "--no-cache", "--output-format", fmt, "-o", "report.out", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    report = (tmp_path / "report.out").read_text(encoding="utf-8")
    shown = "caf\\\\xe9.py" if fmt in ("json", "sarif") else "caf\\xe9.py"  # JSON escapes the backslash
    assert shown in report or (fmt == "sarif" and "caf%5Cxe9.py" in report), report
    assert not any(line.startswith("forged.py") for line in report.splitlines())


def test_stdout_on_a_full_disk_exits_2(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    with open("/dev/full", "w") as full:
        proc = _torchlint("check", "--no-cache", cwd=tmp_path, stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 2
    assert b"cannot write the report" in proc.stderr and b"Traceback" not in proc.stderr


def test_closed_stdout_exits_2(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(f"{sys.executable} -m torchlint check --no-cache >&-", shell=True, cwd=tmp_path,
                          stderr=subprocess.PIPE, env=env, timeout=60)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr
    assert b"standard output is closed" in proc.stderr


# -- 10. terminal injection and empty selections ------------------------------------------

def test_escape_sequences_in_source_are_escaped_in_code_frames(tmp_path, run_cli):
    hostile = "\x1b[2K\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07"
    (tmp_path / "t.py").write_text(BAD.replace("loss.backward()", f"loss.backward()  # {hostile}"))
    code, out, _ = run_cli("check", "--no-cache")
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]52;c;ZXZpbA==\\x07" in out


@pytest.mark.parametrize("output_format", ["full", "concise"])
def test_bidi_controls_in_source_and_names_are_escaped(tmp_path, run_cli, output_format):
    """Trojan Source: every bidi embedding, override, isolate and mark is shown escaped."""
    controls = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    (tmp_path / "t\u202e.py").write_text(BAD.replace("loss.backward()", f"loss.backward()  # {controls}"))
    code, out, _ = run_cli("check", "--no-cache", "--output-format", output_format)
    assert code == 1
    assert not set(controls) & set(out)
    assert "\\u202e" in out


@pytest.mark.parametrize("value", ["", ",", " "])
def test_an_empty_select_is_an_error(tmp_path, run_cli, value):
    (tmp_path / "train.py").write_text(BAD)
    code, _, err = run_cli("check", "--select", value)
    assert code == 2 and "empty selection" in err


def test_concurrent_runs_survive_a_cache_corrupted_under_them(tmp_path):
    for i in range(12):
        (tmp_path / f"m{i}.py").write_text(BAD)
    assert _torchlint("check", cwd=tmp_path).returncode == 1
    targets = cache_entry_files(tmp_path / ".torchlint_cache")
    assert len(targets) == 12
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--output-format", "concise", "-q"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(4)]
    garbage = [b"", b"{", b"\x00" * 64, b"0" * 64 + b"\x00" * 64, b"[" * 5000]
    deadline = time.monotonic() + 3
    i = 0
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        target = targets[i % len(targets)]
        tmp = target.with_suffix(".garbage")
        tmp.write_bytes(garbage[i % len(garbage)])
        os.replace(tmp, target)
        i += 1
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 1, err
        assert b"Traceback" not in err
        lines = out.decode().splitlines()
        assert sorted(line.split(" ")[0] for line in lines if " TL101 " in line) == \
            sorted(f"m{n}.py:4:5:" for n in range(12)) and len(lines) == 12
    final = _torchlint("check", "--output-format", "concise", "-q", cwd=tmp_path)
    assert final.returncode == 1 and len(final.stdout.decode().splitlines()) == 12


@pytest.mark.parametrize("target", ["/proc/self/environ", "/dev/zero"])
def test_a_config_file_linked_to_a_system_file_is_refused(tmp_path, target):
    (tmp_path / "torchlint.toml").symlink_to(target)
    (tmp_path / "train.py").write_text(BAD)
    proc = _torchlint("check", cwd=tmp_path,
                      env={**os.environ, "CI_SECRET": SECRET, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    output = proc.stdout.decode() + proc.stderr.decode()
    assert SECRET not in output and "Traceback" not in output
    if target == "/proc/self/environ":  # /dev/zero is not a file: no config there at all
        assert proc.returncode == 2 and "torchlint.toml: the config file is a symlink to a file outside" in output


def test_stdin_larger_than_the_cap_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("check", "--max-file-size", "1KiB", "-", input="x = 1\n" * 1000)
    assert code == 2 and "standard input is larger than max-file-size" in err


def test_control_characters_in_messages_are_escaped(tmp_path, run_cli):
    # TL601 quotes nothing of the user's, but any message that did would go through the same path.
    from torchlint.output.text import render_concise
    from torchlint.diagnostics import Finding

    f = Finding(code="TL101", message="bad \x1b[31mred\x1b[0m", path="a.py", row=1, col=1, end_row=1, end_col=2)
    assert "\x1b" not in render_concise([f], {})


def test_notebooks_may_carry_outputs_beyond_the_source_cap(tmp_path, run_cli):
    image = "A" * 8000  # an embedded plot: outputs are read but never linted
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": BAD,
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}}]}
    nb = {"cells": [cell], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    code, out, _ = run_cli("check", "--no-cache", "--max-file-size", "4KiB", "--output-format", "concise")
    assert code == 1 and "nb.ipynb:cell 1:4:5: TL101" in out, out
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb).replace(image, image * 6))
    code, out, _ = run_cli("check", "--no-cache", "--max-file-size", "4KiB", "--output-format", "concise")
    assert "nb.ipynb:1:1: TL000 file is larger than max-file-size (40 KiB)" in out, out


def test_an_entries_directory_linked_elsewhere_is_neither_read_nor_written(tmp_path, run_cli):
    (tmp_path / "train.py").write_text(BAD)
    assert run_cli("check")[0] == 1
    entries = read_cache_entries(tmp_path / ".torchlint_cache")
    entries["train.py"]["findings"] = []
    write_cache_entries(tmp_path / ".torchlint_cache", entries)  # under our key: served if reached
    entry = _entry_file(tmp_path)
    forged = entry.read_bytes()
    outside = tmp_path.parent / f"{tmp_path.name}-planted"
    entry.parent.rename(outside)
    entry.parent.symlink_to(outside)
    code, out, _ = run_cli("check", "--output-format", "json")
    assert code == 1 and "TL101" in out  # not read through the link
    assert (outside / entry.name).read_bytes() == forged  # nor rewritten through it
