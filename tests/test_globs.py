"""Globs in `exclude`, `extend-exclude` and `per-file-ignores` mean what they mean to ruff
(globset): the patterns are ruff's documented examples."""

from __future__ import annotations

import pytest

from test_cli import BAD, write
from torchlint.config import GlobSet


@pytest.mark.parametrize(("pattern", "path", "matched"), [
    # ruff's `exclude` docs: single-path patterns match any component; relative ones the path.
    (".mypy_cache", "a/.mypy_cache/x.py", True),
    ("foo.py", "pkg/foo.py", True),
    ("foo_*.py", "pkg/foo_bar.py", True),
    ("directory/foo.py", "directory/foo.py", True),
    ("directory/*.py", "directory/a.py", True),
    ("directory/*.py", "other/a.py", False),
    # ruff's `include` example: `**` as a segment matches none or more directories.
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/pkg/sub/a.py", True),
    ("src/**/*.py", "scripts/a.py", False),
    ("scripts/**/*.py", "scripts/run.py", True),
    # ruff's per-file-ignores example: braces, and a leading `**/` that may match nothing.
    ("**/{tests,docs,tools}/*", "tests/test_a.py", True),
    ("**/{tests,docs,tools}/*", "pkg/docs/conf.py", True),
    ("**/{tests,docs,tools}/*", "pkg/src/a.py", False),
    ("**/__init__.py", "__init__.py", True),
    # classes and escapes
    ("a/[!b]c.py", "a/xc.py", True),
    ("a/[!b]c.py", "a/bc.py", False),
    ("a/[^b]c.py", "a/bc.py", False),
    ("*.py[io]", "m.pyi", True),
    (r"a/\*.py", "a/*.py", True),
    (r"a/\*.py", "a/b.py", False),
    ("a/[b.py", "a/[b.py", True),  # an unclosed class is literal text
    ("src/**", "src/a/b.py", True),
])
def test_globs_match_as_in_ruff(pattern, path, matched):
    assert GlobSet((pattern,)).match_path(path) is matched


def test_a_copied_ruff_config_selects_the_same_files(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["src/**/generated_*.py"]\n'
          '[tool.torchlint.per-file-ignores]\n"**/{tests,docs}/*" = ["TL101"]\n')
    for name in ("src/generated_a.py", "src/pkg/generated_b.py", "src/kept.py", "tests/test_x.py", "pkg/docs/d.py"):
        write(tmp_path, name, BAD)
    code, out, _ = run_cli("check", "--no-cache", "--output-format", "concise", ".")
    files = {line.split(":", 1)[0] for line in out.splitlines() if ": TL" in line}
    assert code == 1 and files == {"src/kept.py"}, out


@pytest.fixture
def outside_git(tmp_path, monkeypatch):
    """A tree no git work tree holds (GIT_CEILING_DIRECTORIES keeps git from finding one above)."""
    pytest.importorskip("pathspec")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return tmp_path


def _checked(run_cli, cwd, *args: str) -> set[str]:
    code, out, err = run_cli("check", "--no-cache", "--show-files", *args, cwd=cwd)
    assert code == 0, err
    return set(out.split())


def test_gitignore_is_respected_outside_a_git_work_tree(outside_git, run_cli):
    root = outside_git
    write(root, ".gitignore", "build_out/\n*_pb2.py\n/scratch.py\n")
    write(root, "pkg/.gitignore", "!keep_pb2.py\nlocal_*.py\n")
    for name in ("a.py", "scratch.py", "sub/scratch.py", "build_out/x.py", "m_pb2.py", "pkg/keep_pb2.py",
                 "pkg/other_pb2.py", "pkg/local_x.py", "pkg/b.py"):
        write(root, name, "x = 1\n")
    assert _checked(run_cli, root, ".") == {"a.py", "sub/scratch.py", "pkg/keep_pb2.py", "pkg/b.py"}
    # A subdirectory named on the command line still honours the .gitignore above it.
    assert _checked(run_cli, root, "pkg") == {"pkg/keep_pb2.py", "pkg/b.py"}
    # --no-respect-gitignore, and a file named explicitly, are checked.
    assert "build_out/x.py" in _checked(run_cli, root, "--no-respect-gitignore", ".")
    assert _checked(run_cli, root, "m_pb2.py") == {"m_pb2.py"}
