"""Which fixes a file's settings allow; free of LibCST, so the CLI can decide whether any
fixing is needed before importing the engine."""

from __future__ import annotations

from dataclasses import dataclass

from torchlint.diagnostics import Finding


@dataclass(frozen=True)
class FixPolicy:
    fixable: frozenset[str]  # empty when the file's settings do not ask for fixes
    unsafe: bool

    def allows(self, finding: Finding) -> bool:
        fix = finding.fix
        return fix is not None and finding.code in self.fixable and (
            fix.safe or self.unsafe)
