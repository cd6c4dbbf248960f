"""TL0xx: diagnostics about the lint itself (files that cannot be parsed, unused noqa)."""
