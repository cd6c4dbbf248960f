"""Every rule code, filled by torchlint.rules.registry when it loads; rules that must tell a
real code from a made-up one (TL001) read it here instead of importing the registry (which
imports them)."""

from __future__ import annotations

KNOWN_CODES: set[str] = set()
