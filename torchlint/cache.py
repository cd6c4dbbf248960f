"""Persistent cache: a file whose content, effective settings and torchlint version are
unchanged reuses its findings without being parsed.

One index per cache directory and torchlint version (`<cache-dir>/<version>/index.json`),
mapping each file to its content hash, the key of the settings it was linted with, and its
findings. A warm run reads one file and stats each source file: when size and mtime match
the index, the recorded hash is trusted; otherwise the file is hashed and compared. Files
modified within the last seconds before the index was written are always re-hashed (git's
"racy clean" rule), so an edit that keeps size and mtime is never missed.

Writes are atomic (temp file + os.replace): concurrent runs may drop each other's new
entries, never corrupt the index. A cache that fails to load or validate is ignored."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from torchlint import __version__
from torchlint.diagnostics import Finding

CACHE_DIR_NAME = ".torchlint_cache"
_FORMAT = 2
_RACY_SECONDS = 2.0


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def settings_key(codes: frozenset[str], options: tuple) -> str:
    blob = repr((sorted(codes), options, sys.version_info[:2], _FORMAT))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.index_path = root / __version__ / "index.json"
        self._entries: Optional[dict[str, Any]] = None
        self._dirty = False

    @property
    def entries(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.index_path, "rb") as fh:
                data = json.load(fh)
            if data.get("format") == _FORMAT and data.get("version") == __version__ \
                    and isinstance(data.get("files"), dict):
                return data["files"]
        except (OSError, ValueError, AttributeError):
            pass
        return {}  # missing, truncated or foreign: start afresh

    @staticmethod
    def _key(path: str) -> str:
        return os.path.abspath(path)

    def lookup(self, path: str, settings: str, display: str,
               stat: os.stat_result) -> tuple[Optional[tuple[list[Finding], Optional[Finding]]], Optional[bytes], Optional[str]]:
        """(cached result or None, the file's bytes if they had to be read, their hash)."""
        entry = self.entries.get(self._key(path))
        if not isinstance(entry, dict) or entry.get("settings") != settings:
            return None, None, None
        data = digest = None
        if entry.get("mtime") != stat.st_mtime_ns or entry.get("size") != stat.st_size:
            with open(path, "rb") as fh:
                data = fh.read()
            digest = content_hash(data)
            if digest != entry.get("hash"):
                return None, data, digest
        try:
            findings = [Finding.from_cache(display, f) for f in entry["findings"]]
            parse_error = Finding.from_cache(display, entry["parse_error"]) if entry.get("parse_error") else None
        except (KeyError, TypeError):
            return None, data, digest
        return (findings, parse_error), data, digest

    def store(self, path: str, settings: str, digest: str, stat: Optional[os.stat_result],
              findings: list[Finding], parse_error: Optional[Finding]) -> None:
        racy = stat is None or time.time() - stat.st_mtime < _RACY_SECONDS
        self.entries[self._key(path)] = {
            "settings": settings, "hash": digest,
            "mtime": None if racy else stat.st_mtime_ns, "size": stat.st_size if stat else None,  # type: ignore[union-attr]
            "findings": [f.to_cache() for f in findings],
            "parse_error": parse_error.to_cache() if parse_error else None,
        }
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.index_path.parent.mkdir(parents=True, exist_ok=True)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Automatically created by torchlint.\n*\n", encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.index_path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": _FORMAT, "version": __version__, "files": self.entries}, fh)
                os.replace(tmp, self.index_path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a read-only checkout still lints; it just does not cache
        self._dirty = False
