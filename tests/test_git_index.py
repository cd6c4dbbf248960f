"""git_index.maybe_tracked answers "certainly not tracked" from `.git/index` alone; it must
never say so where `git ls-files` lists a file, and it hands every index it does not read
plainly back to git."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from torchlint import cache
from torchlint.git_index import maybe_tracked

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True)
    return done.stdout


def _tracked_by_git(root: Path, directory: Path) -> bool:
    return bool(_git(directory, "ls-files", "-z", "--", ".").strip("\0"))


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)
    for rel in ("train.py", "src/model.py", "src/.torchlint_cache/x", "data/cache-old/y", "tracked_cache/z"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    for rel in (".torchlint_cache/0.1.0", "src/fresh_cache", "data/cache", "empty"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / rel / "index.json").write_text("{}")
    return tmp_path


def test_it_never_says_not_tracked_where_git_lists_a_file(repo):
    directories = [p for p in repo.rglob("*") if p.is_dir() and ".git" not in p.parts]
    answers = {str(d.relative_to(repo)): (maybe_tracked(str(d)), _tracked_by_git(repo, d)) for d in directories}
    assert all(maybe for maybe, tracked in answers.values() if tracked), answers
    # untracked directories are answered without git, unless a tracked path spells them
    assert answers["src/fresh_cache"] == (False, False) and answers["empty"] == (False, False)
    assert answers["data/cache"] == (True, False)  # data/cache-old/ spells it: git decides
    assert answers["tracked_cache"] == (True, True) and answers["src"] == (True, True)
    assert answers[".torchlint_cache"][0] is True  # src/.torchlint_cache/ holds the bytes: git decides


def test_outside_any_repository_nothing_is_tracked(tmp_path):
    (tmp_path / "cache").mkdir()
    assert maybe_tracked(str(tmp_path / "cache")) is False


def test_indexes_it_does_not_read_plainly_go_to_git(repo, monkeypatch):
    fresh = str(repo / "src" / "fresh_cache")
    assert maybe_tracked(fresh) is False
    _git(repo, "update-index", "--index-version", "4")  # prefix-compressed paths
    assert maybe_tracked(fresh) is True
    _git(repo, "update-index", "--index-version", "2")
    assert maybe_tracked(fresh) is False
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / "other-index"))
    assert maybe_tracked(fresh) is True
    monkeypatch.delenv("GIT_INDEX_FILE")
    _git(repo, "config", "core.worktree", str(repo))
    assert maybe_tracked(fresh) is True


def test_a_worktree_or_submodule_checkout_goes_to_git(tmp_path):
    (tmp_path / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    (tmp_path / "cache").mkdir()
    assert maybe_tracked(str(tmp_path / "cache")) is True


def test_the_cache_check_starts_no_git_for_an_untracked_cache(repo, monkeypatch):
    import torchlint.git

    def no_git(*args, **kwargs):
        raise AssertionError("git was started")

    monkeypatch.setattr(torchlint.git, "run_git", no_git)
    assert cache.refusal(repo / "src" / "fresh_cache", repo, from_config=False) is None
    monkeypatch.undo()
    _git(repo, "add", "-f", "src/fresh_cache/index.json")
    assert "tracked by git" in cache.refusal(repo / "src" / "fresh_cache", repo, from_config=False)


def _check(directory: Path) -> tuple[bool, bool]:
    """(maybe_tracked, does `git ls-files` list a file there)."""
    return maybe_tracked(str(directory)), _tracked_by_git(directory, directory)


@pytest.mark.parametrize("layout", ["invalid .git between", "bare-like directory", "huge config", "gitlink",
                                    "sparse index", "commondir", "inside .git", "HEAD with a leading space",
                                    "HEAD a symlink", "a HEAD and a commondir", "a dangling HEAD"])
def test_layouts_a_shipped_git_directory_can_take_go_to_git(tmp_path, monkeypatch, layout):
    """A tree can ship its own `.git` (a tarball): the layouts an attack on the first version
    found, where git lists files that a plain reading of `.git/index` would miss."""
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    cache_dir = repo / "sub" / "cache"
    cache_dir.mkdir(parents=True)
    (cache_dir / "x").write_text("{}")
    (repo / "other").write_text("x")
    _git(repo, "add", "sub/cache/x", "other")
    if layout == "invalid .git between":  # git skips an empty .git and uses the repository above
        (repo / "sub" / ".git").mkdir()
    elif layout == "bare-like directory":  # git takes sub/ for a bare repository with a work tree
        _git(repo / "sub", "init", "-q", "--bare", ".")
    elif layout == "huge config":
        with open(repo / ".git" / "config", "a") as config:
            config.write("#" + "x" * (1 << 20) + "\n")
    elif layout == "gitlink":
        _git(repo, "rm", "-q", "--cached", "sub/cache/x")
        blob = "0" * 39 + "1"  # a commit id: the entry is a submodule, not a file
        _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{blob},sub/cache")
    elif layout == "sparse index":
        (repo / "keep").mkdir()
        (repo / "keep" / "y").write_text("y")
        _git(repo, "add", "keep/y")
        _git(repo, "commit", "-qm", "m")
        _git(repo, "sparse-checkout", "set", "--cone", "--sparse-index", "keep")
        cache_dir.mkdir(parents=True, exist_ok=True)
    elif layout == "commondir":
        (repo / ".git" / "commondir").write_text(".\n")
    elif layout == "inside .git":
        cache_dir = repo / ".git" / "cache"
        cache_dir.mkdir()
    elif layout in ("HEAD with a leading space", "HEAD a symlink"):  # a .git git rejects: it goes on up
        inner = repo / "sub" / ".git"
        (inner / "objects").mkdir(parents=True)
        (inner / "refs").mkdir()
        if layout == "HEAD a symlink":
            (inner / "H").write_text("ref: refs/heads/main\n")
            (inner / "HEAD").symlink_to("H")
        else:
            (inner / "HEAD").write_text(" ref: refs/heads/main\n")
    elif layout == "a HEAD and a commondir":  # sub/ is a git directory whose objects live elsewhere
        (repo / "sub" / "HEAD").write_text("ref: refs/heads/main\n")
        (repo / "sub" / "commondir").write_text("../.git\n")
    elif layout == "a dangling HEAD":
        (repo / "sub" / "HEAD").symlink_to("refs/heads/nope")
    maybe, tracked = _check(cache_dir)
    assert maybe is True, (layout, tracked)
