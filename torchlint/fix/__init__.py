"""Automatic fixes. Rules describe a fix as text edits (this package's `edits` module, no
LibCST); `torchlint.fix.engine` applies them and checks the result with LibCST, and is
imported only when `--fix`, `--diff` or `--add-noqa` is asked for."""
