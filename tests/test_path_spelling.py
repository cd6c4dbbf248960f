"""Discovery spells paths as pathlib would (`str(Path(raw))`) without importing pathlib,
which a one-file run no longer pays for (issue 23): the names a report, the cache and the
replay see are the ones they saw when paths were `Path`s."""

from __future__ import annotations

import os
from pathlib import PurePosixPath

import pytest

from torchlint.config import ConfigResolver
from torchlint.files import Discovery, _join, spelled
from torchlint.settings_fields import CliOverrides

SPELLINGS = ["a.py", "./a.py", "a//b.py", "a/./b.py", "a/b/", "./", ".", "", "/", "//", "///", "//a", "///a/b",
             "/a/../b.py", "../x.py", "a/..", ".hidden/x.py", "a/.b", "..", "./../a", "a///"]


@pytest.mark.parametrize("raw", SPELLINGS)
def test_spelled_as_pathlib_spells_it(raw):
    assert spelled(raw) == str(PurePosixPath(raw))


@pytest.mark.parametrize("directory", [".", "a", "a/b", "/", "/a", "//a", "../a"])
def test_a_walked_entry_is_spelled_as_pathlib_joins_it(directory):
    assert _join(directory, "x.py") == str(PurePosixPath(directory) / "x.py")


def test_discovery_names_files_as_pathlib_did(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("top.py", "pkg/a.py", "pkg/sub/b.py"):
        (tmp_path / name).write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    discovery = Discovery(ConfigResolver(CliOverrides(), isolated=True, cwd=tmp_path))
    found = [path for path, _ in discovery.iter_files(["./", "./pkg//a.py", "top.py"])]
    assert found == ["top.py", "pkg/a.py", "pkg/sub/b.py"]  # what cf20502 (pathlib) yielded
    assert all(isinstance(p, str) and os.path.isfile(p) for p in found)
