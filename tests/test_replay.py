"""A repeat of `torchlint check FILE` with unchanged inputs is answered from its recorded
output before click, the settings or any rule is imported (torchlint/replay.py, issue 23),
and anything that could change the answer sends the run the normal way."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import cache_entry_files

from torchlint import catalog, integrity, replay
from torchlint.cli import main

SOURCE = "import torch\n\nnet = torch.nn.Linear(4, 2)\nwith torch.no_grad():\n    loss = net(x).mean()\n    loss.backward()\n"
ARGV = ["check", "train.py", "-q"]
HEAVY = ("torchlint.rules.", "torchlint.config", "torchlint.api", "torchlint.checker", "click", "libcst", "pygls")


def _age(*paths: Path) -> None:
    """Older than the racy window, as files are between a user's edits and runs."""
    past = time.time() - 3600
    for path in paths:
        os.utime(path, (past, past))


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A project whose `check train.py -q` this process ran and recorded; (stdout, exit code)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_isatty", lambda fd: False)  # the subprocesses below run on pipes
    monkeypatch.setattr(replay, "_pending", None)
    monkeypatch.setattr(replay, "_spoiled", False)
    # pytest names the phase (setup, call) in the environment; the subprocess gets none.
    monkeypatch.setattr(replay, "_VOLATILE_ENV", replay._VOLATILE_ENV | {"PYTEST_CURRENT_TEST"})
    (tmp_path / "train.py").write_text(SOURCE)
    first = CliRunner().invoke(main, ARGV)  # fills the lint cache, which touches the directory
    _age(tmp_path / "train.py", tmp_path)
    replay.serve(ARGV)  # no record yet: notes that this run may make one
    assert replay.pending()
    second = CliRunner().invoke(main, ARGV)
    assert (first.output, first.exit_code) == (second.output, second.exit_code)
    assert "TL101" in second.output and second.exit_code == 1
    return second.output, second.exit_code


_PROBE = textwrap.dedent("""
    import sys
    sys.argv[1:] = {argv!r}
    from torchlint.entry import main
    try:
        main()
    finally:
        sys.stderr.write(repr(sorted(m for m in sys.modules if m.startswith({heavy!r}))))
""")


def test_a_warm_repeat_prints_the_same_bytes_and_imports_no_rule(recorded, tmp_path):
    text, code = recorded
    probe = _PROBE.format(argv=ARGV, heavy=HEAVY)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=env)
    assert (done.stdout, done.returncode) == (text, code)
    assert done.stderr == "[]"  # no rule, no settings, no click


def _answers() -> bool:
    try:
        replay.serve(ARGV)
    except SystemExit:
        return True
    return False


def test_unchanged_inputs_are_answered_in_process_too(recorded, capsys):
    capsys.readouterr()
    assert _answers() and capsys.readouterr().out == recorded[0]


@pytest.mark.parametrize("change", ["edit the file", "add a config", "another working directory", "add requirements",
                                    "other flags", "other environment", "other cache",
                                    "a repository appears"])
def test_a_changed_input_goes_the_normal_way(recorded, tmp_path, monkeypatch, change):
    if change == "edit the file":
        (tmp_path / "train.py").write_text(SOURCE + "# edited\n")
        _age(tmp_path / "train.py")  # even with its mtime put back, its ctime and size differ
    elif change == "add a config":
        (tmp_path / "torchlint.toml").write_text('select = ["TL2"]\n')
    elif change == "another working directory":
        sub = tmp_path / "sub"
        sub.mkdir()
        (tmp_path / "train.py").rename(sub / "train.py")
        monkeypatch.chdir(sub)
        assert not _answers()  # another working directory: another key
        monkeypatch.chdir(tmp_path)
        (sub / "train.py").rename(tmp_path / "train.py")
        assert _answers()  # back where it was, the same bytes: the same answer (its stat is new)
        return
    elif change == "add requirements":
        (tmp_path / "requirements.txt").write_text("torch>=1.8\n")
    elif change == "other flags":
        monkeypatch.setattr(sys, "argv", ["torchlint", "check", "train.py"])
        try:
            replay.serve(["check", "train.py"])
        except SystemExit:
            pytest.fail("answered a command line it never recorded")
        return
    elif change == "other environment":
        monkeypatch.setenv("NO_COLOR", "1")
    elif change == "a repository appears":
        (tmp_path / ".git").mkdir()
    elif change == "other cache":
        (entry,) = cache_entry_files(tmp_path / ".torchlint_cache")
        entry.with_suffix(".new").write_bytes(entry.read_bytes())  # rewritten, as another run's store does
        os.replace(entry.with_suffix(".new"), entry)
    assert not _answers()


HEAD = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
       "        self.fc = nn.Linear(4, 3)\n        self.act = nn.Softmax(dim=1)\n\n    def forward(self, x):\n" \
       "        return {out}\n"
TRAIN = "import torch.nn as nn\nfrom pkg.models import Net\n\nmodel = Net()\nloss_fn = nn.CrossEntropyLoss()\n" \
        "for x, y in batches:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n"


def _record_until_answered(argv: list[str], monkeypatch, expected) -> None:
    """Run `argv` in-process until its answer is recorded (a cache hit records too), each
    run's output passing `expected`; then unchanged inputs are answered."""
    for _ in range(2):
        monkeypatch.setattr(replay, "_pending", None)
        monkeypatch.setattr(replay, "_spoiled", False)
        try:
            replay.serve(argv)
        except SystemExit:
            break
        assert expected(CliRunner().invoke(main, argv))
    with pytest.raises(SystemExit):
        replay.serve(argv)


def test_a_module_the_file_imports_edited_in_place_goes_the_normal_way(tmp_path, monkeypatch):
    """The project index read pkg/models.py for train.py's finding: it is an input, also when
    a cache hit answered the run and when the edit leaves every directory's stat alone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_isatty", lambda fd: False)
    monkeypatch.setattr(replay, "_VOLATILE_ENV", replay._VOLATILE_ENV | {"PYTEST_CURRENT_TEST"})
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    models = tmp_path / "pkg" / "models.py"
    models.write_text(HEAD.format(out="self.act(self.fc(x))"))
    (tmp_path / "train.py").write_text(TRAIN)
    argv = ["check", "train.py", "--select", "TL401", "-q"]
    assert "TL401" in CliRunner().invoke(main, argv).output  # fills the lint cache
    _age(tmp_path / "train.py", models, tmp_path / "pkg", tmp_path)
    _record_until_answered(argv, monkeypatch, lambda out: "TL401" in out.output)
    with open(models, "r+", encoding="utf-8") as f:  # in place: no directory's stat changes
        f.write(HEAD.format(out="self.fc(x)          "))
    _age(models)
    monkeypatch.setattr(replay, "_pending", None)
    try:
        replay.serve(argv)
    except SystemExit:
        pytest.fail("answered from a record whose imported module changed")


def test_only_plain_check_command_lines_over_files_are_answered():
    assert replay.check_paths(["check", "a.py", "-q", "--select", "TL1", "--output-format=json"]) == ["a.py"]
    for argv in (["check"], ["check", "-"], ["check", "a.py", "--fix"], ["check", "a.py", "--no-cache"],
                 ["check", "a.py", "--output-format", "sarif"], ["check", "a.py", "--select"], ["rule", "TL101"],
                 ["check", "--", "a.py"], ["check", "a.py", "--config", "x.toml"]):
        assert replay.check_paths(argv) is None, argv


def test_a_run_that_walked_a_directory_or_warned_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_spoiled", False)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(SOURCE)
    _age(tmp_path / "pkg" / "a.py", tmp_path / "pkg", tmp_path)
    monkeypatch.setattr(replay, "_pending", ("key", 0, 0, 0, 0, ("check", "pkg")))
    assert not replay.record("", 0, ["pkg/a.py"], {}, [str(tmp_path)], [], [str(tmp_path)])  # a new file in pkg/
    monkeypatch.setattr(replay, "_pending", ("key", 0, 0, 0, 0, ("check", "pkg/a.py")))
    replay.spoil()
    assert not replay.record("", 0, ["pkg/a.py"], {}, [str(tmp_path)], [], [str(tmp_path)])


@pytest.mark.parametrize("save", ["touched", "the same bytes written again", "replaced atomically",
                                  "a new file beside it"])
def test_the_same_bytes_saved_again_are_answered(recorded, tmp_path, save):
    """An editor's save of an unchanged file, pre-commit's stash and restore, a touch: new
    stat, same bytes, same answer (compared by content hash, the directory's stat left out)."""
    path = tmp_path / "train.py"
    if save == "touched":
        os.utime(path)
    elif save == "the same bytes written again":
        path.write_bytes(path.read_bytes())
    elif save == "replaced atomically":
        (tmp_path / ".train.py.swp").write_bytes(path.read_bytes())
        os.replace(tmp_path / ".train.py.swp", path)
    else:
        (tmp_path / "notes.txt").write_text("x")
    assert _answers()


def test_bytes_are_compared_unless_a_settled_stat_proves_them(recorded, tmp_path):
    """A checked file's record holds (stat, hash, trusted): a stat taken outside the racy
    window answers alone; a racy one, or a new stat, is checked against the hash."""
    path = str(tmp_path / "train.py")
    now = replay._stat(path)
    assert replay._unchanged(path, replay._CONTENT, (now, "not-its-hash", True))  # settled stat, unchanged
    assert not replay._unchanged(path, replay._CONTENT, (now, "not-its-hash", False))  # racy: the bytes decide
    from torchlint.hashing import content_hash

    digest = content_hash((tmp_path / "train.py").read_bytes())
    assert replay._unchanged(path, replay._CONTENT, (None, digest, True))  # another stat, the same bytes
    os.utime(path)
    assert not replay._unchanged(path, replay._CONTENT, (replay._stat(path), "not-its-hash", False))


def test_a_file_whose_bytes_are_not_the_ones_linted_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_spoiled", False)
    (tmp_path / "a.py").write_text(SOURCE)
    _age(tmp_path / "a.py", tmp_path)
    monkeypatch.setattr(replay, "_pending", ("key", 0, 0, 0, 0, ("check", "a.py")))
    assert not replay.record("", 0, ["a.py"], {}, [str(tmp_path)], [], [str(tmp_path)], {"a.py": "other-bytes"})
    assert not replay.record("", 0, ["a.py"], {}, [str(tmp_path)], [], [str(tmp_path)], {})  # no hash: no record


def test_a_linked_config_whose_target_changes_goes_the_normal_way(tmp_path, monkeypatch):
    """A config that is a symlink: the settings read its target, so the record holds the
    target's stat too (an attack found the link's own stat alone replayed a stale answer)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_spoiled", False)
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "real.toml").write_text("ignore = []\n")
    (tmp_path / "torchlint.toml").symlink_to("real.toml")
    _age(tmp_path / "a.py", tmp_path / "real.toml", tmp_path)
    past = time.time() - 3600
    os.utime(tmp_path / "torchlint.toml", (past, past), follow_symlinks=False)
    from torchlint.hashing import content_hash

    digests = {"a.py": content_hash((tmp_path / "a.py").read_bytes())}
    inputs = replay._inputs(["a.py"], {}, [str(tmp_path)], [], digests)
    assert inputs is not None
    assert all(replay._unchanged(*item) for item in inputs)
    (tmp_path / "real.toml").write_text('ignore = ["TL101"]\n')
    assert not all(replay._unchanged(*item) for item in inputs)


def test_a_directory_replaced_by_a_link_goes_the_normal_way(tmp_path, monkeypatch):
    """The project moved and a symlink put in its place: the same bytes at the same path, but
    the settings are now found above the link's target."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text(SOURCE)
    _age(project / "a.py", project)
    monkeypatch.chdir(tmp_path)
    from torchlint.hashing import content_hash

    digests = {"proj/a.py": content_hash((project / "a.py").read_bytes())}
    inputs = replay._inputs(["proj/a.py"], {}, [str(project)], [], digests)
    assert inputs is not None and all(replay._unchanged(*item) for item in inputs)
    (tmp_path / "other").mkdir()
    project.rename(tmp_path / "other" / "real")
    project.symlink_to(tmp_path / "other" / "real")
    assert not all(replay._unchanged(*item) for item in inputs)


@pytest.mark.parametrize("failure", ["timed out", "a rule failed"])
def test_a_run_with_a_timed_out_or_failed_file_is_not_recorded(monkeypatch, failure):
    """As the lint cache: a file past lint-timeout, or one a rule crashed on, is tried again."""
    from types import SimpleNamespace

    result = SimpleNamespace(timed_out=failure == "timed out", internal_error="boom" if failure != "timed out" else None)
    monkeypatch.setattr(replay, "_pending", ("key",))
    monkeypatch.setattr(replay, "_spoiled", False)

    def must_not_record(*args, **kwargs):
        raise AssertionError("recorded")

    monkeypatch.setattr(replay, "record", must_not_record)
    replay.record_report(SimpleNamespace(results=[result]), "text", 0, False)  # type: ignore[arg-type]


def test_the_config_names_it_stats_are_the_ones_the_settings_read():
    # A copy, so that a replay imports no config module; kept in step here.
    from torchlint.config import CONFIG_FILES

    assert replay.CONFIG_NAMES == CONFIG_FILES


def test_records_live_beside_the_cache_key():
    key = integrity.key_path()
    assert key is not None and replay.user_dir() == os.path.join(os.path.dirname(key), "replay")


def test_version_is_answered_without_click_as_click_answers_it(tmp_path):
    probe = _PROBE.format(argv=["--version"], heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    clicked = CliRunner().invoke(main, ["--version"], prog_name="torchlint")
    assert (done.stdout, done.returncode, done.stderr) == (clicked.output, clicked.exit_code, "[]")


def test_a_package_marker_that_appears_goes_the_normal_way(tmp_path, monkeypatch):
    """app/train.py imports `models`: app/models.py while app/ is no package, the models.py
    above it once app/__init__.py exists. The marker's absence is an input of the answer."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_isatty", lambda fd: False)
    monkeypatch.setattr(replay, "_VOLATILE_ENV", replay._VOLATILE_ENV | {"PYTEST_CURRENT_TEST"})
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")  # its directory is an index root
    (tmp_path / "models.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    app = tmp_path / "app"
    app.mkdir()
    (app / "models.py").write_text("class Base:\n    pass\n")
    (app / "train.py").write_text("import torch\nfrom models import Base\n\n\nclass Net(Base):\n"
                                  "    def __init__(self):\n        super().__init__()\n"
                                  "        self.mask = torch.ones(3)\n\n    def forward(self, x):\n"
                                  "        return x * self.mask\n")
    code = catalog.by_name()["unregistered-tensor-attribute"].code
    argv = ["check", "app/train.py", "--select", code, "-q"]
    assert CliRunner().invoke(main, argv).exit_code == 0  # fills the lint cache
    _age(*tmp_path.rglob("*"), tmp_path)
    _record_until_answered(argv, monkeypatch, lambda out: out.exit_code == 0)
    (app / "__init__.py").write_text("")
    _age(app / "__init__.py", app)
    monkeypatch.setattr(replay, "_pending", None)
    try:
        replay.serve(argv)
    except SystemExit:
        pytest.fail("answered from a record made while app/ was no package")
    assert code in CliRunner().invoke(main, argv).output  # Base is now the nn.Module above app/


def test_a_module_changed_after_the_index_read_it_is_not_recorded(tmp_path, monkeypatch):
    """The answer came from the bytes the index read (their hash): a module edited later in
    the run, or one that appeared where the index found none, is not recorded with it."""
    from torchlint.hashing import content_hash

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(replay, "_early", {})
    (tmp_path / "a.py").write_text(SOURCE)
    models = tmp_path / "models.py"
    models.write_text("class Base:\n    pass\n")
    _age(tmp_path / "a.py", models, tmp_path)
    digests = {"a.py": content_hash((tmp_path / "a.py").read_bytes())}
    read = content_hash(models.read_bytes())
    assert replay._inputs(["a.py"], {str(models): read}, [str(tmp_path)], [], digests) is not None
    assert replay._inputs(["a.py"], {str(models): content_hash(b"before the edit")}, [str(tmp_path)], [],
                          digests) is None
    assert replay._inputs(["a.py"], {str(models): None}, [str(tmp_path)], [], digests) is None  # appeared
    assert replay._inputs(["a.py"], {str(tmp_path / "layers.py"): None}, [str(tmp_path)], [],
                          digests) is not None  # still absent


def test_a_config_edited_while_the_run_went_on_is_not_recorded(recorded, tmp_path, monkeypatch):
    """The settings read the config as the run began: an edit after that (settled by the time
    the answer is recorded) must not be recorded with an answer that did not read it."""
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.torchlint]\n")
    _age(config, tmp_path)
    monkeypatch.setattr(replay, "_pending", None)
    assert not _answers()  # a new config: the normal way, which snapshots the settings files
    config.write_text('[tool.torchlint]\nignore = ["TL101"]\n')  # the run read the old one
    _age(config, tmp_path)
    assert not replay.record(*recorded, ["train.py"], {}, [str(tmp_path)], [], [str(tmp_path)],
                             {"train.py": _digest(tmp_path / "train.py")})
    monkeypatch.setattr(replay, "_early", {})  # the same record, had the config been unchanged
    assert replay.record(*recorded, ["train.py"], {}, [str(tmp_path)], [], [str(tmp_path)],
                         {"train.py": _digest(tmp_path / "train.py")})


def _digest(path: Path) -> str:
    from torchlint.hashing import content_hash

    return content_hash(path.read_bytes())


@pytest.mark.parametrize("edited, record_dir", [("pyproject", False), ("requirements", True), ("linked", True),
                                                ("requirements appear", True)])
def test_a_settings_file_edited_during_the_run_is_not_replayed(tmp_path, monkeypatch, edited, record_dir):
    """The settings read the config (or the torch floor's requirements, or a linked config's
    target) at the start; it is edited while the files are linted and aged past the racy
    window (`cp -p`, `tar x`). The answer came from the old bytes: it is not recorded. Also
    for the first record, when the record directory does not exist yet."""
    from torchlint import api

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if record_dir:
        os.makedirs(replay.user_dir(), 0o700)
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setattr(replay, "_isatty", lambda fd: False)
    monkeypatch.setattr(replay, "_VOLATILE_ENV", replay._VOLATILE_ENV | {"PYTEST_CURRENT_TEST"})
    (project / "train.py").write_text("import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n")  # TL906 on torch >= 2.4
    config = project / ("real.toml" if edited == "linked" else "pyproject.toml")
    if edited.startswith("requirements"):
        (project / "pyproject.toml").write_text("[tool.torchlint]\n")
        target, after = project / "requirements.txt", "torch>=2.5\n"
        if edited == "requirements":
            target.write_text("torch>=2.0\n")
        else:  # none listed (the default floor, 2.4: TL906), then one with an older floor appears
            after = "torch>=2.0\n"
    else:
        config.write_text('[tool.torchlint]\nignore = ["TL906"]\n')
        target, after = config, "[tool.torchlint]\n"
        if edited == "linked":
            (project / "pyproject.toml").symlink_to("real.toml")
    argv = ["check", "train.py", "-q"]
    before, now = (1, 0) if edited == "requirements appear" else (0, 1)
    assert CliRunner().invoke(main, argv).exit_code == before  # fills the lint cache
    _age(*(p for p in project.iterdir() if not p.is_symlink()), project)
    if edited == "linked":
        past = time.time() - 3600
        os.utime(project / "pyproject.toml", (past, past), follow_symlinks=False)
    monkeypatch.setattr(replay, "_pending", None)
    monkeypatch.setattr(replay, "_spoiled", False)
    assert not _answers()
    linted = api.run_tasks

    def edited_meanwhile(*args, **kwargs):
        results = linted(*args, **kwargs)
        target.write_text(after)
        _age(target)
        return results

    monkeypatch.setattr(api, "run_tasks", edited_meanwhile)
    assert CliRunner().invoke(main, argv).exit_code == before  # the answer of the old settings
    monkeypatch.setattr(api, "run_tasks", linted)
    monkeypatch.setattr(replay, "_pending", None)
    assert not _answers()
    assert CliRunner().invoke(main, [*argv, "--no-cache"]).exit_code == now  # what the settings now say
    monkeypatch.setattr(replay, "_pending", None)
    assert not _answers()
    assert CliRunner().invoke(main, argv).exit_code == now  # nothing edited during this one: recorded
    monkeypatch.setattr(replay, "_pending", None)
    assert _answers()


def test_a_fifo_put_where_a_read_file_was_is_not_opened(tmp_path):
    """The bytes check opens only regular files: a FIFO would block the run forever."""
    fifo = tmp_path / "requirements.txt"
    os.mkfifo(fifo)
    assert not replay._as_read(str(fifo), "0" * 64)
    plain = tmp_path / "models.py"
    plain.write_text("x = 1\n")
    assert replay._as_read(str(plain), _digest(plain)) and not replay._as_read(str(plain), "0" * 64)
