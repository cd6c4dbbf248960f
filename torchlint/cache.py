"""Persistent per-file cache: a file whose content, effective settings and torchlint
version are unchanged reuses its findings without being parsed.

Layout: <cache-dir>/<version>/<key[:2]>/<key>.json, with a `.gitignore` of `*` at the top
(like ruff). Entries are written atomically (temp file + os.replace), so concurrent runs
never see half-written files; an entry that fails to load or validate is ignored."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from torchlint import __version__
from torchlint.diagnostics import Finding

CACHE_DIR_NAME = ".torchlint_cache"
_FORMAT = 1


def task_key(data: bytes, codes: frozenset[str], options: tuple) -> str:
    h = hashlib.sha256()
    h.update(data)
    h.update(b"\0")
    h.update(repr((sorted(codes), options, __version__, sys.version_info[:2], _FORMAT)).encode())
    return h.hexdigest()


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / __version__
        self._prepared = False

    def _entry(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str, display: str) -> Optional[tuple[list[Finding], Optional[Finding]]]:
        try:
            with open(self._entry(key), "rb") as fh:
                data = json.load(fh)
            if data.get("key") != key:
                return None
            findings = [Finding.from_cache(display, f) for f in data["findings"]]
            parse_error = Finding.from_cache(display, data["parse_error"]) if data["parse_error"] else None
            return findings, parse_error
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, truncated or foreign: recompute

    def put(self, key: str, findings: list[Finding], parse_error: Optional[Finding]) -> None:
        payload: dict[str, Any] = {
            "key": key,
            "findings": [f.to_cache() for f in findings],
            "parse_error": parse_error.to_cache() if parse_error else None,
        }
        target = self._entry(key)
        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(payload, fh)
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a read-only checkout still lints; it just does not cache

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by torchlint.\n*\n", encoding="utf-8")
        self._prepared = True
