"""`--fix` never corrupts or drops a file: a symlink and its target are fixed once, a file
changed meanwhile is skipped, a failed write keeps the original findings, read-only files
are left alone, owner, mode and hard links survive, and temp files do not pile up."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from test_cli import write
from torchlint import safe_io

REPO = Path(__file__).resolve().parent.parent
BROKEN = "import torch\n\n\ndef f(x):\n    with torch.no_grad:\n        return x\n"
FIXED = BROKEN.replace("torch.no_grad:", "torch.no_grad():")
FIX = ("check", "--isolated", "--no-cache", "--select", "TL108", "--fix")
NOBODY = 65534


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "PYTHONDONTWRITEBYTECODE": "1"}


def _subprocess_fix(cwd: Path, *paths: str, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchlint", *FIX, *paths], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec)


def test_a_symlink_and_its_target_are_fixed_once_and_both_reported(tmp_path, run_cli):
    target = write(tmp_path, "pkg/model.py", BROKEN)
    (tmp_path / "pkg" / "alias.py").symlink_to("model.py")
    code, out, err = run_cli(*FIX, "--show-fixes", ".", cwd=tmp_path)
    assert target.read_text() == FIXED  # not `torch.no_grad()()`
    assert code == 0, (out, err)
    assert "Fixed 1 finding" in out + err
    # Lint only: like ruff, each path is reported.
    write(tmp_path, "pkg/model.py", BROKEN)
    code, out, _ = run_cli("check", "--isolated", "--no-cache", "--select", "TL108", ".", cwd=tmp_path)
    assert code == 1 and "pkg/model.py:5" in out and "pkg/alias.py:5" in out


def test_a_symlink_named_before_its_target_is_fixed_once(tmp_path, run_cli):
    target = write(tmp_path, "model.py", BROKEN)
    (tmp_path / "a_link.py").symlink_to("model.py")
    code, out, err = run_cli(*FIX, "a_link.py", "model.py", cwd=tmp_path)
    assert (code, target.read_text()) == (0, FIXED), (out, err)


def test_a_file_changed_while_it_is_fixed_is_skipped_and_reported(tmp_path, run_cli, monkeypatch):
    from torchlint.fix import files

    target = write(tmp_path, "model.py", BROKEN)
    edited = BROKEN + "# saved by the editor meanwhile\n"
    real_fix_text = files.fix_text

    def fix_text_then_editor_saves(*args, **kwargs):
        outcome = real_fix_text(*args, **kwargs)
        target.write_text(edited)
        return outcome

    monkeypatch.setattr(files, "fix_text", fix_text_then_editor_saves)
    code, out, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert target.read_text() == edited
    assert code == 2
    assert "changed on disk" in err and "model.py" in err
    assert "model.py:5:10: TL108" in out  # the finding is still reported


@pytest.mark.skipif(not hasattr(os, "fork"), reason="flock is POSIX")
def test_a_second_fixer_waits_for_the_first_and_then_skips_the_file_it_replaced(tmp_path, run_cli):
    import fcntl
    import threading

    target = write(tmp_path, "model.py", BROKEN)
    holder = os.open(target, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # the first run, between its check and its rename
    outcome: list = []
    second = threading.Thread(target=lambda: outcome.append(run_cli(*FIX, "model.py", cwd=tmp_path)))
    second.start()
    time.sleep(1.0)
    assert target.read_text() == BROKEN and second.is_alive()  # waiting, not writing
    first = write(tmp_path, ".first-run.tmp", FIXED + "# the first run's result\n")
    os.replace(first, target)
    os.close(holder)
    second.join(60)
    code, out, err = outcome[0]
    assert target.read_text() == FIXED + "# the first run's result\n"
    assert code == 2 and "changed on disk" in err, (out, err)


def test_findings_computed_on_an_older_read_are_not_applied_to_new_text(tmp_path, run_cli, monkeypatch):
    """The lint pass read the file; an editor saved before the fix read it again."""
    from torchlint.fix import files

    target = write(tmp_path, "model.py", BROKEN)
    saved = "# a new first line\n" + BROKEN
    real_read_task = files.read_task

    def editor_saves_first(task):
        target.write_text(saved)
        return real_read_task(task)

    monkeypatch.setattr(files, "read_task", editor_saves_first)
    code, out, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert target.read_text() == "# a new first line\n" + FIXED, (out, err)


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EDQUOT])
def test_a_failed_write_keeps_the_original_findings_and_exits_2(tmp_path, run_cli, monkeypatch, errno_):
    def full_disk(fd):  # a full disk or quota shows up at fsync at the latest
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(safe_io.os, "fsync", full_disk)
    target = write(tmp_path, "model.py", BROKEN)
    code, out, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert target.read_text() == BROKEN
    assert code == 2
    assert "All checks passed" not in out
    assert "model.py:5:10: TL108" in out
    assert "cannot write the fixed file" in err and os.strerror(errno_) in err


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def test_a_real_failed_write_under_rlimit_fsize_leaves_the_file_and_no_temp(tmp_path):
    target = write(tmp_path, "model.py", BROKEN)  # 79 bytes: over the 64-byte limit
    proc = _subprocess_fix(tmp_path, "model.py", preexec=_limit_file_size)
    assert target.read_text() == BROKEN
    assert proc.returncode == 2, proc.stderr
    assert "model.py:5:10: TL108" in proc.stdout and "All checks passed" not in proc.stdout
    assert "cannot write the fixed file" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]


def _nobody_tree() -> Path:
    """A directory the unprivileged user owns and can reach (pytest's tmp_path is 0700 root)."""
    root = Path(tempfile.mkdtemp(prefix="torchlint-fix-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(root, NOBODY, NOBODY)
    return root


def _fix_as_nobody(root: Path, warm_up) -> tuple[int, str, str]:
    """`torchlint check --fix model.py` in `root`, in a forked child that drops to uid 65534
    when we are root. Forked, not exec'ed: the interpreter may live where that user cannot
    reach (a 0700 home), so every module is imported by a first run here."""
    warm_up()
    outputs = Path(tempfile.mkdtemp(prefix="torchlint-out-"))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            os.dup2(os.open(outputs / "out", os.O_WRONLY | os.O_CREAT), 1)
            os.dup2(os.open(outputs / "err", os.O_WRONLY | os.O_CREAT), 2)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.chdir(root)
            from torchlint.cli import main
            main([*FIX, "model.py"], prog_name="torchlint")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        return os.waitstatus_to_exitcode(status), (outputs / "out").read_text(), (outputs / "err").read_text()
    finally:
        shutil.rmtree(outputs)


def _warm_up(tmp_path: Path, run_cli):
    return lambda: run_cli(*FIX, str(write(tmp_path, "warm/model.py", BROKEN)), cwd=tmp_path)


def test_a_read_only_file_is_not_fixed_for_a_user_who_cannot_write_it(tmp_path, run_cli):
    root = _nobody_tree()
    try:
        target = write(root, "model.py", BROKEN)
        target.chmod(0o444)
        if os.geteuid() == 0:
            os.chown(target, NOBODY, NOBODY)
        code, out, err = _fix_as_nobody(root, _warm_up(tmp_path, run_cli))
        assert target.read_text() == BROKEN  # the directory is writable: a rename would have worked
        assert stat.S_IMODE(target.stat().st_mode) == 0o444
        assert code == 2, err
        assert "read-only" in err and "model.py" in err
        assert "model.py:5:10: TL108" in out
    finally:
        shutil.rmtree(root)


def test_root_leaves_a_file_nobody_may_write_alone(tmp_path, run_cli):
    target = write(tmp_path, "model.py", BROKEN)
    target.chmod(0o444)
    code, out, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert (code, target.read_text()) == (2, BROKEN)
    assert "read-only (mode 0444)" in err


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a file to another user")
def test_root_fixing_a_users_file_keeps_owner_group_and_mode(tmp_path, run_cli):
    target = write(tmp_path, "model.py", BROKEN)
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o640)
    code, _, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    st = target.stat()
    assert (code, target.read_text()) == (0, FIXED), err
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o640)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a second user")
def test_a_user_fixing_a_group_writable_file_of_another_user_keeps_its_owner(tmp_path, run_cli):
    """The replacement would belong to the fixer: such a file is written in place."""
    root = _nobody_tree()
    try:
        target = write(root, "model.py", BROKEN)
        os.chown(target, 0, NOBODY)
        target.chmod(0o664)
        code, _, err = _fix_as_nobody(root, _warm_up(tmp_path, run_cli))
        st = target.stat()
        assert (code, target.read_text()) == (0, FIXED), err
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, NOBODY, 0o664)
    finally:
        shutil.rmtree(root)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a second user")
def test_a_writable_file_in_a_directory_the_user_cannot_write_is_fixed_in_place(tmp_path, run_cli):
    root = _nobody_tree()
    try:
        os.chown(root, 0, 0)  # the user may not create the temp file beside it
        target = write(root, "model.py", BROKEN)
        os.chown(target, NOBODY, NOBODY)
        code, _, err = _fix_as_nobody(root, _warm_up(tmp_path, run_cli))
        assert (code, target.read_text(), target.stat().st_uid) == (0, FIXED, NOBODY), err
    finally:
        shutil.rmtree(root)


def test_a_hard_linked_file_is_fixed_in_place_and_the_link_survives(tmp_path, run_cli):
    target = write(tmp_path, "model.py", BROKEN)
    other = tmp_path / "elsewhere" / "same.txt"
    other.parent.mkdir()
    os.link(target, other)
    inode = target.stat().st_ino
    code, _, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert (code, target.read_text(), other.read_text()) == (0, FIXED, FIXED), err
    assert target.stat().st_ino == inode and target.stat().st_nlink == 2


def test_a_hard_linked_file_that_cannot_grow_is_left_whole(tmp_path, run_cli, monkeypatch):
    from torchlint.fix import write as fix_write

    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fix_write.os, "posix_fallocate", no_space, raising=False)
    target = write(tmp_path, "model.py", BROKEN)
    os.link(target, tmp_path / "link.txt")
    code, out, err = run_cli(*FIX, "model.py", cwd=tmp_path)
    assert (code, target.read_text()) == (2, BROKEN)
    assert "model.py:5:10: TL108" in out and "cannot write the fixed file" in err


_KILLED_BEFORE_RENAME = """
import os, signal, sys
from torchlint import safe_io
safe_io.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
from torchlint.cli import main
sys.argv = ["torchlint", *sys.argv[1:]]
main()
"""


def test_a_temp_file_left_by_a_killed_run_is_removed_by_the_next_one(tmp_path):
    target = write(tmp_path, "model.py", BROKEN)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_BEFORE_RENAME, *FIX, "model.py"], cwd=tmp_path,
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=120) == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name != "model.py"]
    assert len(left) == 1 and left[0].name.startswith(f".torchlint-{proc.pid}-")
    assert left[0].read_text() == FIXED and target.read_text() == BROKEN
    # A leftover is never linted or listed as a source.
    listed = subprocess.run([sys.executable, "-m", "torchlint", "check", "--isolated", "--show-files", "."],
                            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert listed.stdout.split() == ["model.py"]
    # Fresh, it may belong to a run still writing it: kept. Old, its pid gone: removed.
    assert _subprocess_fix(tmp_path, "model.py").returncode == 0
    assert left[0].exists()
    old = time.time() - safe_io.STALE_TEMP_SECONDS - 60
    os.utime(left[0], (old, old))
    write(tmp_path, "model.py", BROKEN)
    assert _subprocess_fix(tmp_path, "model.py").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]
    assert target.read_text() == FIXED


def test_the_sweep_keeps_temp_files_of_live_processes_and_foreign_names(tmp_path):
    old = time.time() - safe_io.STALE_TEMP_SECONDS - 60
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    names = {"live": f".torchlint-{os.getppid()}-abc123.tmp", "dead": f".torchlint-{dead.stdout.strip()}-x_9.tmp",
             "foreign": ".torchlint-notes.tmp", "no such pid": ".torchlint-99999999999999999999999-x.tmp"}
    for name in names.values():
        path = write(tmp_path, name, "x")
        os.utime(path, (old, old))
    safe_io.sweep_stale_temps(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([names["live"], names["foreign"]])
