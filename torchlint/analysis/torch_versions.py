"""The `torch-version` setting (the oldest torch the linted code must run on) and the
table of deprecated torch APIs that TL901 reads (torchlint/data/deprecated_api.toml, written
by scripts/derive_deprecations.py from what the pinned torch does when each API is called)."""

from __future__ import annotations

from functools import lru_cache

from torchlint.fast_dataclass import dataclass

def parse(version: str) -> tuple[int, int]:
    """"2.4" -> (2, 4); a malformed value (config validation rejects those) reads as 0.0."""
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return 0, 0


def at_least(setting: str, version: str) -> bool:
    return parse(setting) >= parse(version)


@dataclass(frozen=True)
class DeprecatedApi:
    """One row of the deprecation table."""

    name: str
    deprecated: str
    removed: str
    on_current: str
    use: str
    fix: str
    why: str
    source: str
    kind: str = "call"  # "module": imported, not called (`torch._six`)
    unless_keyword: str = ""  # a call passing this keyword is not deprecated (`meshgrid(indexing=)`)
    off: str = ""  # why TL901 does not report it by default (measured noisy); its option `all-deprecations` does

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[1]


@lru_cache(maxsize=1)
def deprecated_apis() -> dict[str, DeprecatedApi]:
    from torchlint.analysis.deprecated_table import ROWS

    return {row["name"]: DeprecatedApi(**row) for row in ROWS}
