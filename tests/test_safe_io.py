"""Bounded reads of files the tree holds (torchlint/safe_io.py): every byte back whatever the
size, a cap that holds for a file that grows after its stat, and what is not a regular file
refused."""

from __future__ import annotations

import os

import pytest

from torchlint.safe_io import RefusedFile, read_fd, read_regular_file


@pytest.mark.parametrize("size", [0, 1, 4095, 65_536, 65_537, (1 << 20) + 3, 3 * (1 << 20)])
def test_every_byte_comes_back(tmp_path, size):
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert read_regular_file(str(tmp_path / "f"), 4 << 20) == data


def test_the_cap_is_kept_for_a_file_that_grows_after_its_stat(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        with open(path, "ab") as grow:
            grow.write(b"y" * 200_000)  # after the size a reader sized its first read by
        assert read_fd(fd, 150_001, expected=11) == b"x" * 10 + b"y" * 149_991
    finally:
        os.close(fd)
    with pytest.raises(RefusedFile):
        read_regular_file(str(path), 150_000)


def test_what_is_not_a_regular_file_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    with pytest.raises(RefusedFile):
        read_regular_file(str(tmp_path / "d"), 100)
    with pytest.raises(RefusedFile):
        read_regular_file(str(tmp_path / "link"), 100, follow_symlinks=False)
